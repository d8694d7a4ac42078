"""The time grid: which instants a range query evaluates, and which column each answer sample is.

Every conversion between seconds and grid positions happens here, with one rule: times are whole
milliseconds, as Prometheus keeps them. A range query from ``start`` to ``end`` evaluates at
``start``, ``start + step``, ... while not past ``end`` (Prometheus's own loop over millisecond
integers), and a sample of its answer at time ``t`` is column ``(t - start) / step``, rounded to the
nearest. The instants are computed from the same integers the query is sent with, so the columns of
a decoded answer are exactly the grid's timestamps.

A pass puts every window on the global grid of multiples of the step (``index * step``): a Job's
timestamps then do not depend on which other Jobs share its pass, and the answers of several queries
(and several segments of one long window) line up by index alone.

A long window is read at a coarser step (:func:`bounded_step`): a fixed number of points per series.

Every answer of a pass is on that global grid, so a :class:`Chunk` is a series' values with their
global indices, and a window's values are the indices ``lo..hi`` of its own grid (:func:`take`,
:func:`take_many`, :func:`scatter`, :func:`present`): no time is converted after decoding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator.telemetry.errors import InvalidWindow

IntArray = np.ndarray[tuple[int], np.dtype[np.int64]]

# Prometheus refuses a range query of more than 11,000 points per series; stay below it.
MAX_POINTS = 10_000


def milliseconds(seconds: float) -> int:
    """A time or duration in whole milliseconds (the resolution Prometheus evaluates at).

    Raises:
        InvalidWindow: not a finite number.
    """
    if not math.isfinite(seconds):
        raise InvalidWindow(f"not a finite time: {seconds}")
    return round(seconds * 1000)


def format_ms(ms: int) -> str:
    """Milliseconds as the API's decimal seconds, exactly (``1767225600.5``, ``30``)."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    whole, frac = divmod(ms, 1000)
    return f"{sign}{whole}.{frac:03d}".rstrip("0").rstrip(".")


def time_param(seconds: float) -> str:
    """A time for the HTTP API (e.g. an instant query's ``time``), rounded to the millisecond."""
    return format_ms(milliseconds(seconds))


@dataclass(frozen=True, slots=True)
class Grid:
    """Evaluation instants ``start, start + step, ...``: ``size`` of them, in milliseconds.

    Attributes:
        start_ms: the first instant.
        step_ms: milliseconds between instants (at least one).
        size: number of instants; 0 for a window that holds none.
    """

    start_ms: int
    step_ms: int
    size: int

    def __post_init__(self) -> None:
        if self.step_ms <= 0 or self.size < 0:
            raise InvalidWindow(f"invalid grid: step {self.step_ms} ms, {self.size} points")

    # --- construction

    @classmethod
    def query(cls, start: float, end: float, step: float) -> Grid:
        """The instants Prometheus evaluates a range query from ``start`` to ``end`` at.

        Args:
            start: first evaluation time, unix seconds.
            end: no evaluation after this, unix seconds.
            step: seconds between evaluations.

        Returns:
            The grid (``end`` need not be on it).

        Raises:
            InvalidWindow: a time that is not finite, a step under a millisecond, or end before start.
        """
        first, last, step_ms = milliseconds(start), milliseconds(end), milliseconds(step)
        if step_ms <= 0:
            raise InvalidWindow(f"invalid step {step}: must be at least a millisecond")
        if last < first:
            raise InvalidWindow(f"range ends before it starts: {start} > {end}")
        return cls(first, step_ms, (last - first) // step_ms + 1)

    @classmethod
    def within(cls, start: float, end: float, step: float) -> Grid:
        """The multiples of ``step`` inside ``[start, end]``: a window's grid (possibly empty).

        Raises:
            InvalidWindow: a time that is not finite or a step under a millisecond.
        """
        step_ms = milliseconds(step)
        if step_ms <= 0:
            raise InvalidWindow(f"invalid step {step}: must be at least a millisecond")
        first = -(-milliseconds(start) // step_ms)
        last = milliseconds(end) // step_ms
        return cls.indices(first, last, step_ms)

    @classmethod
    def indices(cls, first: int, last: int, step_ms: int) -> Grid:
        """The global grid's instants ``first * step`` to ``last * step`` (none when last < first)."""
        return cls(first * step_ms, step_ms, max(0, last - first + 1))

    # --- in seconds

    @property
    def start(self) -> float:
        """The first instant, unix seconds."""
        return self.start_ms / 1000

    @property
    def end(self) -> float:
        """The last instant, unix seconds (one step before ``start`` when the grid is empty)."""
        return (self.start_ms + (self.size - 1) * self.step_ms) / 1000

    @property
    def step(self) -> float:
        """Seconds between instants."""
        return self.step_ms / 1000

    def timestamps(self) -> FloatArray:
        """Every instant, unix seconds."""
        ms = self.start_ms + np.arange(self.size, dtype=np.int64) * self.step_ms
        return np.asarray(ms / 1000, dtype=np.float64)

    def params(self) -> dict[str, str]:
        """``start``, ``end`` and ``step`` as a range query sends them (exact milliseconds)."""
        end_ms = self.start_ms + max(0, self.size - 1) * self.step_ms
        # Whole seconds go as seconds; any other step as a duration in milliseconds, which the API
        # also accepts: Prometheus truncates a float step to whole nanoseconds, and "1.001" (a double
        # just below 1.001) would be evaluated every 1000 ms, off this grid.
        step = format_ms(self.step_ms) if self.step_ms % 1000 == 0 else f"{self.step_ms}ms"
        return {"start": format_ms(self.start_ms), "end": format_ms(end_ms), "step": step}

    # --- global indices (``index * step``)

    @property
    def first(self) -> int:
        """Global index of the first instant (exact on the global grid, e.g. :meth:`within`'s)."""
        return self.start_ms // self.step_ms

    @property
    def last(self) -> int:
        """Global index of the last instant (``first - 1`` when the grid is empty)."""
        return self.first + self.size - 1

    def overlaps(self, other: Grid) -> bool:
        """True when both grids have an instant and their index ranges meet."""
        return self.size > 0 and other.size > 0 and self.first <= other.last and other.first <= self.last

    def index_at_or_before(self, seconds: float) -> int:
        """Global index of the last instant of the global grid at or before ``seconds``."""
        return milliseconds(seconds) // self.step_ms

    # --- answers

    def columns(self, times: FloatArray) -> IntArray:
        """The column of each answer timestamp (unix seconds); out-of-grid ones fall outside ``0..size-1``."""
        offsets = np.rint(times * 1000.0) - self.start_ms
        return np.rint(offsets / self.step_ms).astype(np.int64)


def segments(grids: Iterable[Grid], max_points: int = MAX_POINTS) -> list[Grid]:
    """Cover windows on the global grid with as few query grids as possible, none longer than max_points.

    Windows of a pass usually overlap (every running Job is analysed over the last N minutes), so
    this is normally a single grid; far-apart or very long windows become several.

    Args:
        grids: the windows (one step, global grid); empty ones are ignored.
        max_points: the most instants one query grid may have.

    Returns:
        Sorted, disjoint grids covering every window's instants.
    """
    spans = sorted((g.first, g.last, g.step_ms) for g in grids if g.size > 0)
    if len({s for _, _, s in spans}) > 1:
        raise InvalidWindow("the windows of one pass must share one step")
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for lo, hi, _ in spans:
        if cur is not None and lo <= cur[1]:
            lo = cur[1] + 1
            if hi < lo:
                continue
        if cur is not None and max(cur[1], hi) - cur[0] + 1 <= max_points:
            cur = (cur[0], max(cur[1], hi))
            continue
        if cur is not None:
            out.append(cur)
        cur = (lo, hi)
        while cur[1] - cur[0] + 1 > max_points:
            out.append((cur[0], cur[0] + max_points - 1))
            cur = (cur[0] + max_points, cur[1])
    if cur is not None:
        out.append(cur)
    step_ms = spans[0][2] if spans else 1
    return [Grid.indices(lo, hi, step_ms) for lo, hi in out]


# A Job's memory in a pass is its signals times the points of each series: read at the base step, a
# four-day run has 48 times the points of a two-hour one. Doubling the base step (rather than dividing
# the window exactly) keeps the steps few, so Jobs of similar length share one batched fetch, and each
# step a multiple of the base one, so the grids still line up. A coarser step costs detail, not
# correctness: gauges are sampled once a step, counter rates averaged over it.
# Points kept per series: a two-hour window at the default 30 s step. bench_bounded shows the peak
# memory of a 4-day, 16-pod final analysis at this cap.
SERIES_POINTS = 240


def bounded_step(start: float, end: float, base_step: float, max_points: int = SERIES_POINTS) -> float:
    """The step that reads ``start..end`` in at most ``max_points`` points per series.

    Args:
        start: window start, unix seconds.
        end: window end, unix seconds.
        base_step: the configured step, seconds (a shorter window is read at it).
        max_points: the cap on points per series.

    Returns:
        ``base_step`` times the smallest power of two that fits the window in ``max_points`` steps.
    """
    if not (math.isfinite(start) and math.isfinite(end)) or base_step <= 0:
        return base_step
    ratio = max(0.0, end - start) / (base_step * max_points)
    if ratio <= 1.0:
        return base_step
    return base_step * float(2 ** math.ceil(math.log2(ratio)))


# --- series on the global grid, cut onto a window by index


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
            # One slice per chunk: signal answers are dense rows on the grid.
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
