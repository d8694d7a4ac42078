"""Where each pod's time goes along the grid: the step model run with the timeline's wander and phases.

The result is the shared account every exporter's view is drawn from: for each pod and grid point,
the step time and the seconds per step spent in each stage, in the collective, and waiting for the
slowest pod. Exporters only ever turn these seconds (and the bytes they move) into their own units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyn.plans import Plan
from bottleneck_operator_dev.familyn.steps import step_time
from bottleneck_operator_dev.familyn.timeline import COMPILE, Timeline

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Activity:
    """Seconds per step, per pod (P, N) unless said otherwise.

    Attributes:
        step: the job's step time, (N,).
        stages: each stage's seconds, with the wander applied.
        sync: time a pod's GPUs sit in the collective (its exposed part plus waiting for the slowest pod).
        comm_total: the collective's whole duration, hidden or not, (N,).
        stepping: 1 where steps advance and the pod exists, (P, N).
        compiling: 1 where the pod loads and compiles, (P, N).
        live: 1 where the pod exists, (P, N).
    """

    step: FloatArray
    stages: dict[str, FloatArray]
    sync: FloatArray
    comm_total: FloatArray
    stepping: FloatArray
    compiling: FloatArray
    live: FloatArray

    def share(self, name: str) -> FloatArray:
        """A stage's share of the step, 0 where the job does not step."""
        out: FloatArray = self.stages[name] / self.step * self.stepping
        return out


def run_activity(plan: Plan, line: Timeline, stages: dict[str, FloatArray], comm: FloatArray) -> Activity:
    """The step model at every grid point, with each pod's wander on its own stages."""
    wandered = {k: v * line.jitter for k, v in stages.items()}
    comm_w = comm * line.jitter.mean(axis=0)
    step, own = step_time(wandered, comm_w, line.alive, bubble=plan.bubble, overlap=plan.overlap)
    live = line.alive.astype(np.float64)
    stepping = live * line.progress
    multi = plan.pods * plan.gpus > 1
    sync = np.maximum(step - own, 0.0) if multi else np.zeros_like(own)
    sync = np.minimum(sync, step) * stepping
    comm_total = comm_w if multi else np.zeros_like(comm_w)
    compiling = live * (line.phase == COMPILE)
    return Activity(np.maximum(step, 1e-6), wandered, sync, comm_total, stepping, compiling, live)
