"""Range answers decoded straight onto the step grid, and cut onto windows by grid index.

A pass over a thousand Jobs reads millions of samples. Decoded the usual way, every sample
becomes a ``[timestamp, "value"]`` list of Python objects, many times the size of the float it
carries, and all of a pass's answers are alive at once. Here each series is taken apart the moment
the JSON decoder has built it (an ``object_hook``), its samples are converted to numpy in batches,
and the answer ends as one dense float64 matrix on the query's :class:`~..plan.grid.Grid`: 8 bytes per
grid point.

Every answer of a pass is on the global grid of multiples of the step, so a :class:`Chunk` is a
series' values with their global indices, and a window's values are the indices ``lo..hi`` of its
own grid: no time is converted after decoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator.telemetry.plan.grid import Grid, IntArray

Float2D = np.ndarray[tuple[int, int], np.dtype[np.float64]]

_FLUSH = 1 << 13  # samples converted to numpy at a time: bounds the Python objects alive at once
_SERIES = object()  # what a decoded series is replaced by in the JSON tree


@dataclass(frozen=True)
class Matrix:
    """A range answer on the query's grid.

    Attributes:
        labels: each series' labels, in answer order.
        grid: the query's evaluation instants; column ``k`` is instant ``k``.
        values: (series, columns) samples; NaN where a series has no sample.
    """

    labels: list[dict[str, str]]
    grid: Grid
    values: Float2D

    @property
    def first(self) -> int:
        """Global grid index (``time / step``) of column 0."""
        return self.grid.first

    @property
    def columns(self) -> int:
        return int(self.values.shape[1])

    def row(self, i: int) -> FloatArray:
        """Series ``i`` on the grid (a view)."""
        return cast(FloatArray, self.values[i])


class _Decoder:
    """Collects the series of one answer while ``json.loads`` builds it."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.labels: list[dict[str, str]] = []
        self._rows: list[int] = []
        self._times: list[Any] = []
        self._values: list[Any] = []
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def hook(self, obj: dict[str, Any]) -> Any:
        values = obj.get("values")
        metric = obj.get("metric")
        if not (isinstance(values, list) and isinstance(metric, dict)):
            return obj
        row = len(self.labels)
        self.labels.append(metric)  # the API's label names and values are JSON strings
        if values:
            times, samples = zip(*values, strict=True)
            self._times.extend(times)
            self._values.extend(samples)
            self._rows.extend([row] * len(times))
            if len(self._times) >= _FLUSH:
                self._flush()
        return _SERIES

    def _flush(self) -> None:
        if not self._times:
            return
        n = len(self._times)
        times = np.fromiter(self._times, dtype=np.float64, count=n)
        # float() reads Prometheus's "NaN", "+Inf" and "-Inf" as well as numbers.
        values = np.fromiter(map(float, self._values), dtype=np.float64, count=n)
        rows = np.fromiter(self._rows, dtype=np.int64, count=n)
        self._parts.append((rows, self.grid.columns(times), values))
        self._rows, self._times, self._values = [], [], []

    def matrix(self) -> Matrix:
        self._flush()
        size = self.grid.size
        out = np.full((len(self.labels), size), np.nan, dtype=np.float64)
        for rows, cols, values in self._parts:
            keep = (cols >= 0) & (cols < size)
            out[rows[keep], cols[keep]] = values[keep]
        self._parts = []
        return Matrix(labels=self.labels, grid=self.grid, values=out)


def decode_matrix(body: bytes | str, grid: Grid) -> Matrix:
    """Decode a ``/api/v1/query_range`` response body.

    Args:
        body: the HTTP body.
        grid: the query's evaluation instants (see :class:`~..plan.grid.Grid`): the matrix's columns.

    Returns:
        The answer as a matrix.

    Raises:
        ValueError, TypeError, KeyError: the body is not a successful Prometheus matrix answer
            (malformed JSON included: ``json.JSONDecodeError`` is a ValueError).
    """
    decoder = _Decoder(grid)
    doc = json.loads(body, object_hook=decoder.hook)
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise ValueError("not a successful Prometheus answer")
    data = doc["data"]
    result = data["result"] if isinstance(data, dict) else None
    if not isinstance(result, list) or any(item is not _SERIES for item in result):
        raise ValueError("the answer has no matrix result")
    return decoder.matrix()


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


# Labels that say whose a series is, shown first (after the malformed ones) when a series is named.
_WHOSE = ("namespace", "pod", "exported_namespace", "exported_pod", "container", "node", "instance", "gpu")
_SHOWN = 300  # characters of a series' text in a message


def malformed_series(labels: Any) -> str | None:
    """A series as text when its labels are not a mapping of strings to strings (as Prometheus writes), else None.

    The malformed labels come first, then those that say whose the series is: the text is cut short.
    """
    if isinstance(labels, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return None
    if not isinstance(labels, dict):
        return repr(labels)[:_SHOWN]
    name = labels.get("__name__")
    bad = [k for k, v in labels.items() if not (isinstance(k, str) and isinstance(v, str))]
    whose = [k for k in _WHOSE if k in labels and k not in bad]
    rest = [k for k in labels if k not in bad and k not in whose and k != "__name__"]
    inner = ", ".join(f"{k}={json.dumps(labels[k])}" for k in (*bad, *whose, *rest))
    text = f"{name if isinstance(name, str) else ''}{{{inner}}}"
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
