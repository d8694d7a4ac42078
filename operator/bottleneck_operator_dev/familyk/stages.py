"""Family K's account of one training step: its stages, the step time, and what removing each saves.

A step runs several lanes at once, and the step takes as long as the slowest lane:

- the loader lane: worker processes read samples (``io``) and decode/augment/tokenise them
  (``decode``); reading and decoding overlap across workers, so the slower of the two bounds it;
- the host lane: the trainer's main process prepares each batch (``host``: collation, host-side
  tokenisation, embedding lookups in host RAM) and stalls on host memory (``swap``: swap-in, direct
  reclaim); CUDA launches are asynchronous, so this lane overlaps the GPU's work;
- the copy lane: host-to-device copies on a side stream (``copy``);
- the GPU lane: kernels that are math-bound (``math``, whose memory traffic alone would take
  ``math_mem``) and kernels that are bandwidth-bound (``bw``, whose arithmetic alone would take
  ``bw_math``), and collectives (``comm``) that can hide under a share ``overlap`` of the compute
  (bucketed all-reduce during backward, FSDP prefetch). A collective longer than the compute it
  hides under is exposed.

The label is the class of the stage whose removal shortens the step most (DESIGN.md's definition),
computed here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck


@dataclass(frozen=True)
class Step:
    """Seconds per step that each stage would take if nothing else held it up."""

    io: float
    decode: float
    host: float
    swap: float
    copy: float
    math: float
    math_mem: float
    bw: float
    bw_math: float
    comm: float
    overlap: float

    @property
    def compute(self) -> float:
        return self.math + self.bw

    @property
    def gpu_lane(self) -> float:
        """Compute plus what the collectives add beyond the compute they hide under."""
        c = self.compute
        return max(c, (1.0 - self.overlap) * c + self.comm)

    @property
    def loader_lane(self) -> float:
        return max(self.io, self.decode)

    @property
    def host_lane(self) -> float:
        return self.host + self.swap

    @property
    def time(self) -> float:
        return max(self.loader_lane, self.host_lane, self.copy, self.gpu_lane)


# Stage -> (class, mechanism) of what removing it relieves.
STAGES: dict[str, tuple[Bottleneck, str]] = {
    "io": (Bottleneck.IO, "storage"),
    "cpu": (Bottleneck.CPU, "host-cpu"),
    "swap": (Bottleneck.MEMORY, "host-memory-pressure"),
    "hbm": (Bottleneck.MEMORY, "hbm-bandwidth"),
    "compute": (Bottleneck.GPU, "compute"),
    "links": (Bottleneck.INTERCONNECT, "links"),
}


def without(step: Step, stage: str) -> Step:
    """The step with one stage's limit removed (its wait gone; a kernel left at its other bound)."""
    if stage == "io":
        return replace(step, io=0.0)
    if stage == "cpu":
        return replace(step, decode=0.0, host=0.0)
    if stage == "swap":
        return replace(step, swap=0.0)
    if stage == "hbm":
        return replace(step, bw=step.bw_math)
    if stage == "compute":
        return replace(step, math=step.math_mem)
    if stage == "links":
        return replace(step, comm=0.0, copy=0.0)
    raise ValueError(f"no stage {stage!r}")


def speedups(step: Step) -> dict[str, float]:
    """Stage -> how much faster the step runs without that stage's limit (>= 1)."""
    t = step.time
    return {stage: t / max(without(step, stage).time, 1e-9) for stage in STAGES}


def bounding_stage(step: Step) -> tuple[str, float, float]:
    """The stage whose removal shortens the step most, its speed-up, and the runner-up's."""
    ranked = sorted(speedups(step).items(), key=lambda kv: kv[1], reverse=True)
    return ranked[0][0], ranked[0][1], ranked[1][1]
