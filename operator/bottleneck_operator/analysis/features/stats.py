"""NaN-aware statistics over the last axis of many short series at once.

Feature extraction summarises tens of thousands of ~30-sample series per batch. ``np.nanquantile``
and ``np.nan_to_num`` cost several passes each over the whole (pods x series x time) array; here one
sort per series serves every quantile, and NaN handling is one mask computed once and reused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.window import FloatArray

__all__ = ["nan_segment_mean", "quantile_ranks", "row_means", "row_peaks", "summarise_rows", "summary"]

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

    ``rows`` is scratch, sorted in place (its order is lost): a caller that made it for the purpose
    spares the copy :func:`summary` makes. ``ranks`` is :func:`quantile_ranks` for ``rows``' length;
    ``out`` (series x (len(quantiles) + 2)) may be a strided view.
    """
    count = rows.shape[1] - _row_count(np.isnan(rows))
    # A series without a valid sample (a signal its pod lacks) summarises to NaN. Where many do, the
    # others are picked out so that the sort and the sums skip them; a few cost less than the picking.
    empty = count == 0
    n_empty = int(np.count_nonzero(empty))
    if n_empty * 8 <= len(rows):
        _summarise_valid(rows, count, ranks, out)
        return
    out[empty] = np.nan
    if n_empty < len(rows):
        kept = ~empty
        part = np.empty((len(rows) - n_empty, out.shape[1]))
        _summarise_valid(rows[kept], count[kept], ranks, part)
        out[kept] = part


def _summarise_valid(rows: FloatArray, count: npt.NDArray[np.integer[Any]], ranks: IntArray, out: FloatArray) -> None:
    """:func:`summarise_rows` given each series' count of valid samples."""
    t = rows.shape[1]
    rows.sort(axis=-1)  # NaN last
    # taken before the missing samples are zeroed: a series with none valid reads NaN at rank 0
    at = ranks.take(count, axis=0)
    at += np.arange(0, len(rows) * t, t, dtype=np.intp)[:, None]
    out[:, 1:-1] = rows.ravel().take(at)
    np.copyto(rows, 0.0, where=np.isnan(rows))  # a masked copy: faster than np.putmask
    # The per-series results below are 1-D and short: each numpy call costs more than its arithmetic,
    # so they are written in place (``out=``), the count turned to float once for both divisions.
    n = count.astype(np.float64)
    mean = out[:, 0]
    # a series with no valid sample: 0 / 0, NaN mean and cv
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(np.add.reduce(rows, axis=1), n, out=mean)
        # einsum sums the squares without a temporary (series x time) array
        var = np.einsum("ij,ij->i", rows, rows)
        var /= n
        var -= mean * mean
        np.sqrt(np.maximum(var, 0.0, out=var), out=var)
        var /= np.maximum(np.abs(mean), 1e-3)
        np.minimum(var, 10.0, out=out[:, -1])


def row_means(rows: FloatArray) -> FloatArray:
    """The NaN-ignoring mean of each row of 2-D ``rows`` (NaN for a row with no sample): the mean
    :func:`summarise_rows` gives, without the sort. ``rows`` is scratch, zero-filled in place."""
    missing = np.isnan(rows)
    count = rows.shape[1] - _row_count(missing)
    np.copyto(rows, 0.0, where=missing)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.add.reduce(rows, axis=1) / count, dtype=np.float64)


def row_peaks(rows: FloatArray) -> FloatArray:
    """The NaN-ignoring maximum of each row of 2-D ``rows`` (NaN for a row with no sample)."""
    # reduced across a time-major copy: a call per sample, not per row (a maximum is exact in any order)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.fmax.reduce(np.ascontiguousarray(rows.T), axis=0), dtype=np.float64)


def _row_count(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.integer[Any]]:
    """How many of ``mask`` are set along its last axis."""
    if mask.shape[-1] < 256:
        # einsum adds the bytes in one pass (no overflow below 256 a row), where a reduction over a
        # short last axis costs a call per row
        counts: npt.NDArray[np.integer[Any]] = np.einsum("...j->...", mask.view(np.uint8))
        return counts
    return np.asarray(np.add.reduce(mask, axis=-1, dtype=np.intp), dtype=np.intp)


def nan_segment_mean(x: FloatArray, starts: IntArray) -> FloatArray:
    """NaN-ignoring mean over consecutive row segments of ``x`` beginning at ``starts`` (non-empty)."""
    missing = np.isnan(x)
    total = _segment_sum(np.where(missing, 0.0, x), starts)
    # the counts are whole numbers, the same in any order: summed as bytes (an eighth of the memory of
    # 0.0s and 1.0s) and widened once per segment
    valid = np.logical_not(missing, out=missing).view(np.uint8)
    count = _segment_sum(valid, starts, np.dtype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.divide(total, count, out=total), dtype=np.float64)


_FEW_ROWS = 8  # numpy sums up to 7 rows one after the other; more in an unrolled, pairwise order


def _segment_sum(x: npt.NDArray[Any], starts: IntArray, dtype: np.dtype[Any] | None = None) -> npt.NDArray[Any]:
    """``np.add.reduceat(x, starts, axis=0, dtype=dtype)``, to the last bit, for a few rows per segment
    (a Job's pods).

    reduceat adds a segment's first row to the sum of the others, taken one after the other for up to
    seven; adding every short segment's k-th row in turn gives the same numbers in a few wide
    operations instead of one per segment. Longer segments go through reduceat one by one. Short
    segments are summed in ``x``'s own type and then widened to ``dtype``: bytes of 0 and 1 sum to at
    most _FEW_ROWS there.
    """
    sizes = np.diff(starts, append=len(x))
    total = x.take(starts, axis=0)
    long = np.flatnonzero(sizes > _FEW_ROWS)
    short = sizes.copy()
    short[long] = 1
    # the segments of several rows, longest first: those that still have a k-th row are a prefix, added
    # to in place rather than picked out and put back for each k
    more = np.flatnonzero(short > 1)
    more = more[np.argsort(-short[more], kind="stable")]
    depth = short[more]
    if len(more):
        rest = x.take(starts[more] + 1, axis=0)
        for k in range(2, int(depth[0])):
            deeper = rest[: np.count_nonzero(depth > k)]
            np.add(deeper, x.take(starts[more[: len(deeper)]] + k, axis=0), out=deeper)
        total[more] += rest
    total = total.astype(x.dtype if dtype is None else dtype, copy=False)
    for i in long:
        total[i] = np.add.reduceat(x[starts[i] : starts[i] + sizes[i]], [0], axis=0, dtype=total.dtype)[0]
    return total
