"""The step model: where one training iteration's time goes, and which stage bounds it.

An iteration has two paths that run side by side. The input path (loader workers) reads samples
from storage and decodes them on the CPU; the device path (the trainer process) copies the batch to
the GPU, runs the kernels, waits for the collectives it could not hide, and stalls whenever the
kernel has to bring the trainer's own pages back from swap. A prefetch queue between them lets the
faster path wait for the slower one, but a shallow queue leaks some of the shorter path's jitter into
the step.

The label is never read off a signal: each class's stages are removed in turn, the step recomputed,
and the class whose removal shortens the step most is the bottleneck (shared/DESIGN.md's definition).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from bottleneck_operator.contract.verdict import Bottleneck

# The stages each class owns: removing a class means setting these to zero.
CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("decode",),
    Bottleneck.INTERCONNECT: ("h2d", "comm"),
    Bottleneck.GPU: ("tensor",),
    Bottleneck.MEMORY: ("hbm", "swap"),
}


@dataclass(frozen=True)
class StepModel:
    """Seconds per iteration spent in each stage (what one iteration would take were it alone).

    Attributes:
        read: storage reads of one iteration's samples at the storage's sustained rate.
        decode: CPU decode/augment/collate of one iteration, spread over the cores the workers get.
        h2d: host-to-device copy that the trainer waits for (not hidden behind compute).
        tensor: compute-bound kernels (matrix math on the tensor cores, convolutions).
        hbm: kernels bound by HBM bandwidth (embedding gathers, optimizer, attention decode).
        comm: collective time the trainer waits for, after overlap and gradient accumulation.
        swap: the trainer's stalls on swap-in and reclaim (host memory pressure).
        prefetch: batches the loader may run ahead (1-8).
    """

    read: float
    decode: float
    h2d: float
    tensor: float
    hbm: float
    comm: float
    swap: float
    prefetch: int = 2

    @property
    def input_path(self) -> float:
        # Workers overlap reads and decodes imperfectly: a worker reads, then decodes its batch.
        return max(self.read, self.decode) + 0.12 * min(self.read, self.decode)

    @property
    def device_path(self) -> float:
        return self.h2d + self.tensor + self.hbm + self.comm + self.swap

    @property
    def step(self) -> float:
        """The iteration's wall time: the slower path, plus what a shallow queue fails to hide."""
        fast, slow = sorted((self.input_path, self.device_path))
        return slow + fast * 0.06 / self.prefetch

    def without(self, cls: Bottleneck) -> StepModel:
        """The same iteration with one class's stages removed."""
        zeros: dict[str, Any] = dict.fromkeys(CLASS_STAGES[cls], 0.0)
        return replace(self, **zeros)

    def speedups(self) -> dict[Bottleneck, float]:
        """For each class, how much faster the step would be without its stages."""
        step = self.step
        return {cls: step / max(self.without(cls).step, 1e-9) for cls in CLASS_STAGES}

    def bound(self) -> tuple[Bottleneck, float, float]:
        """The class whose removal helps most, its speed-up, and the runner-up's speed-up."""
        ranked = sorted(self.speedups().items(), key=lambda kv: kv[1], reverse=True)
        return ranked[0][0], ranked[0][1], ranked[1][1]

    def memory_mechanism(self) -> str:
        """Which of Memory's two stages is the larger (its mechanism when Memory binds)."""
        return "host-memory-pressure" if self.swap >= self.hbm else "hbm-bandwidth"


def scale_stage(model: StepModel, stage: str, factor: float) -> StepModel:
    """The model with one stage multiplied by ``factor``."""
    return replace(model, **{stage: getattr(model, stage) * factor})


def tune_margin(model: StepModel, stage: str, target: Bottleneck, margin: float) -> StepModel | None:
    """Scale ``stage`` until ``target`` binds and leads the runner-up's speed-up by ``margin``.

    The lead (best speed-up over the runner-up's) grows with the binding stage, so a bisection
    over its scale finds it; None when no scale makes ``target`` the bound (the caller redraws).
    """
    base = max(getattr(model, stage), 1e-3)
    seeded = replace(model, **{stage: base})

    def lead(k: float) -> float:
        cls, best, second = scale_stage(seeded, stage, k).bound()
        return best / second if cls is target else second / best

    lo, hi = 1e-3, 1.0
    while lead(hi) < margin and hi < 1e4:
        hi *= 2.0
    if lead(hi) < margin:
        return None
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if lead(mid) < margin else (lo, mid)
    tuned = scale_stage(seeded, stage, hi)
    return tuned if tuned.bound()[0] is target else None
