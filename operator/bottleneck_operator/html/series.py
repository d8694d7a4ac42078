"""Which of the window's signals the page plots, reduced to plain arrays (no plotting here).

The GPU activity plot prefers ``gr_engine_active`` (a PROF field, the share of time the graphics
engine was busy) over ``gpu_util`` (a DEV field that counts any kernel running, so it reads high for
tiny kernels): the same preference as the analysis's coverage rule in ``contract/window.py``.
The limiting-stage plot shows, for the verdict's class, the first signal the window has from an
ordered list, with the capacity it is measured against when the window carries one as a signal
(e.g. the CPU limit) and the rate the report says is needed to keep the GPUs busy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.labels import signal_label
from bottleneck_operator.contract.window import FloatArray, JobWindow
from bottleneck_operator.reports import CapacityItem

GPU_ACTIVITY_SIGNALS = ("gr_engine_active", "gpu_util")
# Beyond this many pods a plot shows the Job's mean only, and the GPU activity of each pod is a heat
# map (one row per pod): more lines are unreadable.
MAX_POD_LINES = 8
# Columns of the heat map: enough to see phases, few enough to keep the raster small.
HEATMAP_COLUMNS = 300
# Long windows are averaged down to this many points per line, to keep the page small.
MAX_POINTS = 1500


@dataclass(frozen=True)
class Candidate:
    """One way to show a class's limiting stage.

    Attributes:
        signal: the signal plotted per pod.
        limit_signal: a signal that is this one's capacity over time (same unit), or None.
        resource: the report's ``capacity[].resource`` whose ``needed`` is drawn as a line, or None.
    """

    signal: str
    limit_signal: str | None = None
    resource: str | None = None


LIMITING: dict[str, tuple[Candidate, ...]] = {
    "IO": (
        Candidate("node_disk_read_bps", None, "storage_read"),
        Candidate("fs_read_bps", None, "storage_read"),
        Candidate("sc_io_read_bps", None, "storage_read"),
        Candidate("sc_net_rx_bps", None, "storage_read"),
        Candidate("node_net_rx_bps", None, "storage_read"),
        Candidate("node_disk_busy_frac"),
    ),
    "CPU": (
        Candidate("cpu_cores", "cpu_limit_cores", "cpu_cores"),
        Candidate("sc_cpu_cores", "cpu_limit_cores", "cpu_cores"),
        Candidate("node_cpu_busy_frac"),
    ),
    "Interconnect": (
        Candidate("pcie_rx_bps", None, "pcie_host_to_device"),
        Candidate("nvlink_total_bps", None, "nvlink"),
        Candidate("nvlink_rx_bps", None, "nvlink"),
        Candidate("sc_net_rx_bps", None, "network"),
        Candidate("node_net_rx_bps", None, "network"),
    ),
    "GPU": (
        Candidate("tensor_active", None, "tensor_pipes"),
        Candidate("sm_active"),
        Candidate("gpu_util"),
    ),
    "Memory": (
        Candidate("dram_active", None, "gpu_memory_bandwidth"),
        Candidate("mem_working_set_bytes", "mem_limit_bytes"),
        Candidate("fb_used_frac"),
    ),
}


@dataclass(frozen=True)
class Line:
    """One plotted line: a label and values aligned on ``x`` (unix seconds)."""

    label: str
    x: FloatArray
    y: FloatArray
    dashed: bool = False

    @property
    def points(self) -> int:
        return int(np.count_nonzero(np.isfinite(self.y)))


@dataclass(frozen=True)
class SignalPlot:
    """What one signal plot shows: its lines and horizontal reference levels."""

    signal: str
    lines: tuple[Line, ...]
    references: tuple[tuple[str, float], ...] = ()


def block_reduce(x: FloatArray, y: FloatArray, limit: int = MAX_POINTS) -> tuple[FloatArray, FloatArray]:
    """Block means down to at most ``limit`` points, NaN where a block had no sample."""
    n = len(x)
    if n <= limit:
        return x, y
    size = -(-n // limit)
    blocks = -(-n // size)
    pad = blocks * size - n
    xs = np.concatenate([x, np.full(pad, np.nan)]).reshape(blocks, size)
    ys = np.concatenate([y, np.full(pad, np.nan)]).reshape(blocks, size)
    return _nanmean(xs), _nanmean(ys)


def _nanmean(rows: FloatArray) -> FloatArray:
    """Mean over the last axis ignoring NaN; NaN where a row has none (without numpy's warning)."""
    finite = np.isfinite(rows)
    count = finite.sum(axis=-1)
    total = np.where(finite, rows, 0.0).sum(axis=-1)
    out: FloatArray = np.divide(total, count, out=np.full(count.shape, np.nan), where=count > 0)
    return out


def has_signal(window: JobWindow, signal: str) -> bool:
    return any(signal in p.signals and np.isfinite(p.signals[signal]).any() for p in window.pods)


def _pod_lines(window: JobWindow, signal: str, *, mean_only: bool) -> list[Line]:
    x = np.asarray(window.timestamps, dtype=np.float64)
    rows = [np.asarray(p.signals[signal], dtype=np.float64) for p in window.pods if signal in p.signals]
    if not rows:
        return []
    lines: list[Line] = []
    if not mean_only:
        for pod in window.pods:
            if signal in pod.signals:
                lines.append(Line(pod.pod, *block_reduce(x, np.asarray(pod.signals[signal], dtype=np.float64))))
    if len(rows) > 1:
        lines.append(Line("Job mean", *block_reduce(x, _nanmean(np.stack(rows, axis=-1)))))
    return lines


def job_mean(window: JobWindow, signal: str) -> FloatArray:
    """The mean over the pods that have ``signal``, per sample (NaN where none has a value)."""
    rows = [np.asarray(p.signals[signal], dtype=np.float64) for p in window.pods if signal in p.signals]
    return _nanmean(np.stack(rows, axis=-1))


@dataclass(frozen=True)
class HeatMap:
    """Per-pod values of one signal: ``values[pod, column]`` over ``x`` (column centres, unix seconds)."""

    signal: str
    pods: tuple[str, ...]
    x: FloatArray
    values: FloatArray

    @property
    def points(self) -> int:
        return int(np.count_nonzero(np.isfinite(self.values)))


def gpu_heatmap(window: JobWindow) -> HeatMap | None:
    """Each pod's GPU activity as one row, when there are more pods than lines stay readable."""
    if len(window.pods) <= MAX_POD_LINES:
        return None
    signal = next((s for s in GPU_ACTIVITY_SIGNALS if has_signal(window, s)), None)
    if signal is None:
        return None
    x = np.asarray(window.timestamps, dtype=np.float64)
    pods = [p for p in window.pods if signal in p.signals]
    rows = [block_reduce(x, np.asarray(p.signals[signal], dtype=np.float64), HEATMAP_COLUMNS) for p in pods]
    return HeatMap(signal, tuple(p.pod for p in pods), rows[0][0], np.stack([y for _, y in rows]))


def gpu_activity(window: JobWindow) -> SignalPlot | None:
    """Per-pod GPU activity (and the Job's mean), or None when the window has neither signal."""
    for signal in GPU_ACTIVITY_SIGNALS:
        if has_signal(window, signal):
            lines = _pod_lines(window, signal, mean_only=len(window.pods) > MAX_POD_LINES)
            return SignalPlot(signal, tuple(lines))
    return None


def limiting_stage(window: JobWindow, bottleneck: str, capacity: Sequence[CapacityItem]) -> SignalPlot | None:
    """The verdict's limiting signal against its capacity, or None (Unknown, or no such signal)."""
    cands = [c for c in LIMITING.get(bottleneck, ()) if has_signal(window, c.signal)]
    if not cands:
        return None
    needs = {c.resource: c for c in capacity if _finite(c.needed)}
    cand = min(cands, key=lambda c: _distance(window, c, needs))
    lines = _pod_lines(window, cand.signal, mean_only=len(window.pods) > MAX_POD_LINES)
    if cand.limit_signal is not None and has_signal(window, cand.limit_signal):
        limit = _pod_lines(window, cand.limit_signal, mean_only=True) or _pod_lines(
            window, cand.limit_signal, mean_only=False
        )
        lines.extend(Line(f"limit: {signal_label(cand.limit_signal)}", ln.x, ln.y, dashed=True) for ln in limit[-1:])
    refs: tuple[tuple[str, float], ...] = ()
    if cand.resource in needs:
        refs = (("needed to keep the\nGPUs busy", float(needs[cand.resource].needed)),)
    return SignalPlot(cand.signal, tuple(lines), refs)


def _distance(window: JobWindow, cand: Candidate, needs: Mapping[str, CapacityItem]) -> tuple[int, float]:
    """Rank candidates: the one the report's capacity was computed from first, then list order.

    The analysis picks, e.g., network or disk reads for IO by which carried more; the capacity's
    ``observed`` is that rate, so the signal whose mean is nearest to it (in ratio) is the one it used.
    """
    need = needs.get(cand.resource or "")
    observed = float(need.observed) if need is not None and _finite(need.observed) else 0.0
    if observed <= 0:
        return (1, 0.0)
    rows = [np.asarray(p.signals[cand.signal], dtype=np.float64) for p in window.pods if cand.signal in p.signals]
    values = np.concatenate(rows)
    mean = float(values[np.isfinite(values)].mean())
    if mean <= 0:
        return (1, 0.0)
    return (0, abs(float(np.log(mean / observed))))


def _finite(v: object) -> bool:
    return isinstance(v, int | float) and bool(np.isfinite(float(v)))
