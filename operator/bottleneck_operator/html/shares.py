"""Where the step time goes over the window: the GPUs' busy share and each measured wait, per sample.

The same reading as the report's account (``analysis/explain/account.py``), sample by sample and
as the Job's mean over pods: the pod's PSI "some" shares for IO, CPU and host memory, the larger of
CPU pressure and the CFS throttled share for CPU. A host wait can cost no more than the time the
GPUs were idle, so each is capped there, and where the waits together exceed it they are scaled
down to fit (they overlap: a task can wait on I/O and memory at once). What idle time no wait
explains stays "idle, no wait measured". Link time is left out: collectives run as kernels, so it
hides inside the busy share rather than beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.window import FloatArray, JobWindow
from bottleneck_operator.html.series import GPU_ACTIVITY_SIGNALS, block_reduce, has_signal, job_mean

# stage -> the signals measuring its wait, the largest reading taken (as the account does).
WAITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("IO", ("sc_psi_io_some",)),
    ("CPU", ("sc_psi_cpu_some", "sc_throttled_frac", "cpu_throttled_frac")),
    ("Memory", ("sc_psi_mem_some",)),
)
COMPUTING = "computing (GPU busy)"
UNEXPLAINED = "idle, no wait measured"


@dataclass(frozen=True)
class Layer:
    """One band of the stack: its name, the class it stands for ("" for none), its share per sample."""

    label: str
    cls: str
    y: FloatArray


@dataclass(frozen=True)
class StepShares:
    """The stacked step-time plot: x (unix seconds) and the bands, bottom first; they sum to 1 or less."""

    x: FloatArray
    layers: tuple[Layer, ...]
    busy_signal: str

    @property
    def points(self) -> int:
        return int(np.count_nonzero(np.isfinite(self.layers[0].y))) if self.layers else 0


def _reading(window: JobWindow, signals: tuple[str, ...]) -> FloatArray | None:
    found = [job_mean(window, s) for s in signals if has_signal(window, s)]
    if not found:
        return None
    stacked = np.stack(found)
    out: FloatArray = np.where(np.isfinite(stacked), stacked, -np.inf).max(axis=0)
    return np.where(np.isfinite(out), np.clip(out, 0.0, 1.0), np.nan)


def step_shares(window: JobWindow) -> StepShares | None:
    """Busy, each measured wait and the unexplained rest, or None without a GPU activity signal."""
    busy_signal = next((s for s in GPU_ACTIVITY_SIGNALS if has_signal(window, s)), None)
    if busy_signal is None:
        return None
    busy = np.clip(job_mean(window, busy_signal), 0.0, 1.0)
    idle = 1.0 - busy
    waits = [(cls, r) for cls, signals in WAITS if (r := _reading(window, signals)) is not None]
    capped = [(cls, np.minimum(np.nan_to_num(r), idle)) for cls, r in waits]
    total = np.sum([r for _, r in capped], axis=0) if capped else np.zeros_like(busy)
    # overlapping waits that together exceed the idle time share it in proportion
    scale = np.divide(idle, total, out=np.ones_like(total), where=total > idle)
    layers = [Layer(COMPUTING, "GPU", busy)]
    layers += [Layer(f"waiting for {cls}" if cls != "IO" else "waiting for I/O", cls, r * scale) for cls, r in capped]
    explained = np.sum([layer.y for layer in layers[1:]], axis=0) if capped else np.zeros_like(busy)
    layers.append(Layer(UNEXPLAINED, "", np.clip(idle - explained, 0.0, 1.0)))
    x = np.asarray(window.timestamps, dtype=np.float64)
    reduced = [(layer, block_reduce(x, layer.y)) for layer in layers]
    bands = tuple(Layer(layer.label, layer.cls, y) for layer, (_, y) in reduced)
    return StepShares(reduced[0][1][0], bands, busy_signal)
