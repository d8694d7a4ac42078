"""NaN-aware statistics over the last axis of many short series at once.

Feature extraction summarises tens of thousands of ~30-sample series per batch. ``np.nanquantile``
and ``np.nan_to_num`` cost several passes each over the whole (pods x series x time) array; here one
sort per series serves every quantile, and NaN handling is one mask computed once and reused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.window import FloatArray

__all__ = ["nan_corr", "nan_segment_mean", "sorted_valid", "summary"]

IntArray = npt.NDArray[np.intp]


def sorted_valid(d: FloatArray) -> tuple[FloatArray, IntArray]:
    """Each series sorted along the last axis with its missing samples set to 0, and its valid count.

    NaN sorts last, so the first ``n`` values of each sorted series are its valid samples in order
    and the zeros after them add nothing to sums.

    Returns:
        (sorted values, same shape as ``d``; number of valid samples, shape ``d.shape[:-1]``).
    """
    ordered = np.sort(d, axis=-1)
    missing = np.isnan(ordered)
    # the first NaN's position is the valid count; a series whose last sample is valid has no NaN
    n = (
        np.where(missing[..., -1], missing.argmax(axis=-1), d.shape[-1])
        if d.shape[-1]
        else np.zeros(d.shape[:-1], np.intp)
    )
    np.putmask(ordered, missing, 0.0)
    return ordered, np.asarray(n, dtype=np.intp)


def summary(d: FloatArray, quantiles: Sequence[float]) -> FloatArray:
    """Mean, nearest-rank quantiles and coefficient of variation of each series, ignoring NaN.

    A quantile ``q`` of ``n`` valid samples is the sorted sample at rank ``round(q * (n - 1))``, half
    rounding to even: ``np.nanquantile(..., method="nearest")``. The cv is std/|mean| with |mean|
    floored at 1e-3 and the ratio capped at 10, so near-zero series stay bounded.

    Args:
        d: series along the last axis, NaN where missing.
        quantiles: the quantiles wanted, each in [0, 1].

    Returns:
        Shape ``d.shape[:-1] + (len(quantiles) + 2,)``: mean, each quantile, cv; NaN where a series
        has no valid sample.
    """
    lead, t = d.shape[:-1], d.shape[-1]
    rows = d.reshape(int(np.prod(lead)), t)
    out = np.empty((len(rows), len(quantiles) + 2))
    if t == 0:
        out[:] = np.nan
        return out.reshape(*lead, len(quantiles) + 2)
    # the rank of each quantile for each possible number of valid samples, looked up per series
    valid = np.maximum(np.arange(t + 1) - 1, 0)
    ranks = np.rint(np.multiply.outer(valid, np.asarray(quantiles, dtype=np.float64))).astype(np.intp)
    # A block of series at a time, small enough to stay in cache through the several passes below;
    # the whole (pods x series x time) array would go to memory and back at each of them.
    step = max(1, _BLOCK // max(t, 1))
    row_start = (np.arange(min(step, len(rows)), dtype=np.intp) * t)[:, None]
    for start in range(0, len(rows), step):
        block = rows[start : start + step]
        _summary_rows(block, ranks, row_start[: len(block)], out[start : start + step])
    return out.reshape(*lead, len(quantiles) + 2)


_BLOCK = 1 << 17  # samples per block: 1 MiB of float64


def _summary_rows(rows: FloatArray, ranks: IntArray, row_start: IntArray, out: FloatArray) -> None:
    """:func:`summary` of 2-D ``rows`` (series x time) into ``out``, with the quantile ``ranks`` by
    valid count and each row's offset in the flattened block."""
    ordered, count = sorted_valid(rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = ordered.sum(axis=1) / count
        # einsum sums the squares without a temporary (series x time) array
        var = np.maximum(np.einsum("ij,ij->i", ordered, ordered) / count - mean * mean, 0.0)
        cv = np.minimum(np.sqrt(var) / np.maximum(np.abs(mean), 1e-3), 10.0)
    out[:, 0] = mean
    out[:, 1:-1] = ordered.ravel().take(ranks.take(count, axis=0) + row_start)
    out[:, -1] = cv
    out[count == 0] = np.nan


def nan_corr(a: FloatArray, b: FloatArray, min_samples: int = 4) -> FloatArray:
    """Pearson correlation of each row pair over the last axis, over samples where both are present.

    NaN where fewer than ``min_samples`` pairs remain or either side is flat (std below 1e-9).
    """
    valid = ~(np.isnan(a) | np.isnan(b))
    n = np.add.reduce(valid, axis=-1, dtype=np.intp)
    with np.errstate(invalid="ignore", divide="ignore"):
        am = np.where(valid, a, 0.0).sum(axis=-1) / n
        bm = np.where(valid, b, 0.0).sum(axis=-1) / n
        da = a - am[..., None]
        db = b - bm[..., None]
        np.putmask(da, ~valid, 0.0)
        np.putmask(db, ~valid, 0.0)
        cov = (da * db).sum(axis=-1)
        sa = np.sqrt((da * da).sum(axis=-1))
        sb = np.sqrt((db * db).sum(axis=-1))
        r = cov / (sa * sb)
    r[(n < min_samples) | (sa < 1e-9) | (sb < 1e-9)] = np.nan
    return np.asarray(r, dtype=np.float64)


def nan_segment_mean(x: FloatArray, starts: IntArray) -> FloatArray:
    """NaN-ignoring mean over consecutive row segments of ``x`` beginning at ``starts`` (non-empty)."""
    valid = ~np.isnan(x)
    total = np.add.reduceat(np.where(valid, x, 0.0), starts, axis=0)
    count = np.add.reduceat(valid, starts, axis=0, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / count, dtype=np.float64)
