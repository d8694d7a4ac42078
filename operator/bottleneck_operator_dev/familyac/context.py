"""What every exporter of one Job reads: its configuration, stage figures, integrals and window grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyac.hardware import LOCAL_STORAGE
from bottleneck_operator_dev.familyac.sources import Integrals, integrate
from bottleneck_operator_dev.familyac.stages import Stages
from bottleneck_operator_dev.familyac.timeline import (
    COMM,
    DECODE,
    FAULT,
    H2D,
    HBM,
    LAUNCH,
    MATH,
    PIN,
    READ,
    RESTART,
    Timeline,
)
from bottleneck_operator_dev.familyac.workload import Config

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Context:
    """One Job's inputs to its exporters.

    Attributes:
        cfg, stages: the draw and its stage figures.
        integ: per-rank cumulative quantities (see :func:`quantities`).
        grid: the window's timestamps; ``start``/``end`` its bounds, ``step`` its spacing.
        reset_at: when the drawn exporter's counters restart (None: no reset).
    """

    cfg: Config
    stages: Stages
    integ: Integrals
    grid: FloatArray
    start: float
    end: float
    step: float
    reset_at: float | None

    @property
    def blocking_reads(self) -> bool:
        """Readers sleep in D state (block devices, NFS): iowait and io pressure; object-store readers do not."""
        return self.cfg.storage != "object"

    @property
    def local_reads(self) -> bool:
        return self.cfg.storage in LOCAL_STORAGE

    def at(self, t: FloatArray, phase: float) -> FloatArray:
        """One rank's cumulative quantities at window times ``t``, at its own phase."""
        return self.integ.at(t - self.start + phase)

    def pod(self, t: FloatArray, phases: FloatArray) -> FloatArray:
        """A pod's cumulative quantities (the sum over its ranks)."""
        return sum((self.at(t, p) for p in phases), start=np.zeros((len(self.integ.names), t.size)))

    def q(self, values: FloatArray, name: str) -> FloatArray:
        row: FloatArray = values[self.integ.row(name)]
        return row


def quantities(tl: Timeline, s: Stages, cfg: Config) -> Integrals:
    """Per-rank integrals: seconds busy per resource, CPU seconds, bytes moved, faults, kills."""
    res, busy, nb = tl.resource, tl.busy, tl.nbytes

    def on(*which: int) -> np.ndarray:
        return np.where(np.isin(res, which), busy, 0.0)

    per_bucket = s.grad_bytes / max(len(s.bucket_s), 1)
    weights = {
        "read": on(READ),
        "read_bytes": np.where(res == READ, nb, 0.0),
        "cpu": on(DECODE, PIN, LAUNCH) / s.cpu_stretch + 0.3 * on(FAULT),
        "decode": on(DECODE),
        "main": on(LAUNCH, PIN),
        "h2d_bytes": np.where(res == H2D, nb * cfg.model.batch * cfg.model.input_bytes, 0.0),
        "math": on(MATH),
        "hbm": on(HBM),
        "comm": on(COMM),
        "comm_bytes": np.where(res == COMM, nb * per_bucket, 0.0),
        "fault": on(FAULT),
        "kills": np.where(res == RESTART, 1.0, 0.0),
    }
    return integrate(tl.start, tl.end, weights, tl.t0, tl.t1)
