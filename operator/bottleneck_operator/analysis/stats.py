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

__all__ = ["nan_corr", "nan_segment_mean", "quantile_ranks", "summarise_rows", "summary"]

IntArray = npt.NDArray[np.intp]


def quantile_ranks(t: int, quantiles: Sequence[float]) -> IntArray:
    """The sorted position of each quantile for each possible number of valid samples 0..t, shape
    (t + 1, len(quantiles)): ``round(q * (n - 1))``, half to even."""
    valid = np.maximum(np.arange(t + 1) - 1, 0)
    return np.rint(np.multiply.outer(valid, np.asarray(quantiles, dtype=np.float64))).astype(np.intp)


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
    ranks = quantile_ranks(t, quantiles)
    # A block of series at a time, small enough to stay in cache through the several passes below;
    # the whole (pods x series x time) array would go to memory and back at each of them.
    step = max(1, _BLOCK // max(t, 1))
    for start in range(0, len(rows), step):
        summarise_rows(rows[start : start + step].copy(), ranks, out[start : start + step])
    return out.reshape(*lead, len(quantiles) + 2)


_BLOCK = 1 << 17  # samples per block: 1 MiB of float64


def summarise_rows(rows: FloatArray, ranks: IntArray, out: FloatArray) -> None:
    """:func:`summary` of 2-D ``rows`` (series x time, at least one sample each) into ``out``.

    ``rows`` is sorted in place (its order is lost): a caller that made it for the purpose spares
    the copy :func:`summary` makes. ``ranks`` is :func:`quantile_ranks` for ``rows``' length;
    ``out`` (series x (len(quantiles) + 2)) may be a strided view.
    """
    t = rows.shape[1]
    rows.sort(axis=-1)  # NaN last
    missing = np.isnan(rows)
    # the first NaN's position is the valid count; a row whose last sample is valid has no NaN
    count = np.where(missing[:, -1], missing.argmax(axis=1), t)
    # taken before the missing samples are zeroed: a series with none valid reads NaN at rank 0
    row_start = np.arange(0, len(rows) * t, t, dtype=np.intp)[:, None]
    out[:, 1:-1] = rows.ravel().take(ranks.take(count, axis=0) + row_start)
    np.putmask(rows, missing, 0.0)
    # a series with no valid sample: 0 / 0, NaN mean and cv
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = rows.sum(axis=1) / count
        # einsum sums the squares without a temporary (series x time) array
        var = np.maximum(np.einsum("ij,ij->i", rows, rows) / count - mean * mean, 0.0)
        out[:, -1] = np.minimum(np.sqrt(var) / np.maximum(np.abs(mean), 1e-3), 10.0)
    out[:, 0] = mean


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
    zeroed = np.where(valid, x, 0.0)
    total = _segment_sum(zeroed, starts)
    count = _segment_sum(valid.astype(np.float64), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / count, dtype=np.float64)


_FEW_ROWS = 8  # numpy sums up to 7 rows one after the other; more in an unrolled, pairwise order


def _segment_sum(x: FloatArray, starts: IntArray) -> FloatArray:
    """``np.add.reduceat(x, starts, axis=0)``, to the last bit, for a few rows per segment (a Job's pods).

    reduceat adds a segment's first row to the sum of the others, taken one after the other for up to
    seven; adding every short segment's k-th row in turn gives the same numbers in a few wide
    operations instead of one per segment. Longer segments go through reduceat one by one.
    """
    sizes = np.diff(starts, append=len(x))
    total = x[starts]
    long = np.flatnonzero(sizes > _FEW_ROWS)
    short = sizes.copy()
    short[long] = 1
    if len(starts) and short.max() > 1:
        more = np.flatnonzero(short > 1)
        rest = x[starts[more] + 1]
        for k in range(2, int(short.max())):
            deeper = np.flatnonzero(short[more] > k)
            rest[deeper] += x[starts[more[deeper]] + k]
        total[more] += rest
    for i in long:
        total[i] = np.add.reduceat(x[starts[i] : starts[i] + sizes[i]], [0], axis=0)[0]
    return total
