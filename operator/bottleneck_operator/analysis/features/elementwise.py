"""Elementwise helpers of the derived series: NaN-aware arithmetic at numpy's fastest.

The derived series run on every window the operator reads, so each helper picks the numpy call that
makes the fewest passes; each says which plain expression it equals, to the bit.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.analysis.features.stats import row_peaks
from bottleneck_operator.contract.window import FloatArray


def coalesce(*arrays: FloatArray, inplace: bool = False) -> FloatArray:
    """First non-NaN value per element, in argument order (in the first array itself with ``inplace``)."""
    out = arrays[0] if inplace else arrays[0].copy()
    for a in arrays[1:]:
        np.copyto(out, a, where=np.isnan(out))
    return out


def div(a: FloatArray, b: FloatArray | float, out: FloatArray | None = None) -> FloatArray:
    """a / b with the infinite quotients blanked (NaN), into ``out`` when given (it may be ``b``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(a, b, out=out)
    # a NaN quotient is already NaN: only the infinite ones need blanking
    np.copyto(out, np.nan, where=np.isinf(out))
    return np.asarray(out, dtype=np.float64)


def floor(x: FloatArray, low: float) -> FloatArray:
    """``np.maximum(x, low)`` at half the cost (numpy's clip loop is vectorised, maximum against a scalar
    is not); the same but where ``x`` is -0.0 and ``low`` 0.0, which clip keeps."""
    return np.asarray(np.clip(x, low, np.inf), dtype=np.float64)


BIG = float(np.finfo(np.float64).max)


def nan_to_num(x: FloatArray) -> FloatArray:
    """``np.nan_to_num(x)`` to the bit, in a clip and a masked fill: a fraction of its passes."""
    out = np.clip(x, -BIG, BIG)
    np.copyto(out, 0.0, where=np.isnan(out))
    return np.asarray(out, dtype=np.float64)


def nan_sum(a: FloatArray, b: FloatArray) -> FloatArray:
    """a + b treating NaN as 0 unless both are NaN."""
    # an infinite term counts as the largest finite float, as np.nan_to_num reads it
    out = nan_to_num(a) + nan_to_num(b)
    np.copyto(out, np.nan, where=np.isnan(a) & np.isnan(b))
    return out


def per(a: FloatArray, b: FloatArray, low: float) -> FloatArray:
    """a / max(b, low) (``low`` > 0), infinite quotients blanked."""
    den = floor(b, low)
    return div(a, den, out=den)


def clipped(x: FloatArray, low: float, high: float) -> FloatArray:
    """``x`` clipped to [low, high] in place: for a fresh array, where np.clip would make another."""
    return np.asarray(np.clip(x, low, high, out=x), dtype=np.float64)


def log_rate(x: FloatArray, per: FloatArray | None = None) -> FloatArray:
    """log10(1 + max(x, 0) [/ per]): a rate (per GPU) on a log scale, 0 at rest (1 + ±0 is 1: floor is exact)."""
    out = floor(x, 0.0)
    if per is not None:
        out /= per
    out += 1.0
    return np.asarray(np.log10(out, out=out), dtype=np.float64)


def rel_peak(x: FloatArray) -> FloatArray:
    """Each sample over its pod's peak in the window (NaN when the pod has no positive sample)."""
    peak = row_peaks(x)[:, None]  # NaN only where every sample is
    np.copyto(peak, np.nan, where=~(peak > 0) | np.isinf(peak))
    return div(x, peak)
