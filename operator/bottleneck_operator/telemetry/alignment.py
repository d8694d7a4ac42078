"""Cutting answers onto a window: series as chunks of the global grid, sliced by index.

Every answer of a pass is on the global grid of multiples of the step (:mod:`.grid`), so a chunk is
a series' values with their global indices, and a window's values are the indices ``lo..hi`` of its
own grid: no time is converted here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator.telemetry.grid import IntArray


@dataclass(frozen=True, slots=True)
class Chunk:
    """Samples of one series on the grid: indices and values (NaN allowed)."""

    idx: IntArray
    val: FloatArray


def scatter(chunks: Iterable[Chunk], lo: int, hi: int) -> FloatArray:
    """Values of the chunks on indices lo..hi (NaN where no chunk has a sample).

    Args:
        chunks: pieces of one series (e.g. one per segment); later ones win on overlap.
        lo: first index.
        hi: last index.

    Returns:
        An array of hi - lo + 1 floats.
    """
    out = np.full(max(0, hi - lo + 1), np.nan, dtype=np.float64)
    for c in chunks:
        if _dense(c):
            # One slice per chunk on the grid (signal answers are dense rows; see matrix.py).
            a, b = max(lo, int(c.idx[0])), min(hi, int(c.idx[-1]))
            if a <= b:
                out[a - lo : b - lo + 1] = c.val[a - int(c.idx[0]) : b - int(c.idx[0]) + 1]
            continue
        keep = (c.idx >= lo) & (c.idx <= hi)
        out[c.idx[keep] - lo] = c.val[keep]
    return out


def take(chunks: Sequence[Chunk], lo: int, hi: int) -> FloatArray | None:
    """Like :func:`scatter`, but None when the result has no finite value.

    The usual case, one dense chunk covering lo..hi (a signal answer on the segment's grid), is a
    slice copy: assembling a pass calls this for every signal of every pod.
    """
    if len(chunks) == 1 and hi >= lo:
        c = chunks[0]
        if _dense(c):
            first, last = int(c.idx[0]), int(c.idx[-1])
            if first <= lo and last >= hi:
                part = c.val[lo - first : hi - first + 1]
                return part.copy() if np.isfinite(part).any() else None
    out = scatter(chunks, lo, hi)
    return out if np.isfinite(out).any() else None


def take_many(
    named: Iterable[tuple[str, Sequence[Chunk]]], lo: int, hi: int, grids: Mapping[int, int]
) -> dict[str, FloatArray]:
    """:func:`take` for many series at once: name -> values on lo..hi, series without a finite value left out.

    Args:
        named: (name, chunks) pairs.
        lo: first index.
        hi: last index.
        grids: ``id()`` of index arrays known to be consecutive runs -> their first index (a pass's
            segment grids, which every signal answer shares). A series that is one chunk on such a
            grid, covering lo..hi, is one row of a single copy made for all of them, instead of a
            copy and a check each: assembling a pass does this for every pod.

    Returns:
        The values of each name (rows of one array where they could be taken together).
    """
    out: dict[str, FloatArray] = {}
    names: list[str] = []
    rows: list[FloatArray] = []
    width = hi - lo + 1
    for name, chunks in named:
        if len(chunks) == 1 and width > 0:
            c = chunks[0]
            first = grids.get(id(c.idx))
            if first is not None and first <= lo and first + len(c.idx) > hi:
                names.append(name)
                rows.append(c.val[lo - first : hi - first + 1])
                continue
        values = take(chunks, lo, hi)
        if values is not None:
            out[name] = values
    if rows:
        block = np.array(rows, dtype=np.float64)
        kept = np.isfinite(block).any(axis=1).astype(bool).tolist()
        for name, row, keep in zip(names, block, kept, strict=True):
            if keep:
                out[name] = row
    return out


def present(chunks: Iterable[Chunk], lo: int, hi: int) -> bool:
    """True when any chunk has a finite value on lo..hi."""
    for c in chunks:
        if _dense(c):
            a, b = max(lo, int(c.idx[0])), min(hi, int(c.idx[-1]))
            if a <= b and np.isfinite(c.val[a - int(c.idx[0]) : b - int(c.idx[0]) + 1]).any():
                return True
            continue
        keep = (c.idx >= lo) & (c.idx <= hi)
        if np.isfinite(c.val[keep]).any():
            return True
    return False


def _dense(c: Chunk) -> bool:
    """True when a chunk's indices are one consecutive run (so it can be sliced, not masked)."""
    n = len(c.idx)
    return n > 0 and int(c.idx[-1]) - int(c.idx[0]) == n - 1
