"""The workloads family I's jobs run and how their step times are drawn.

Each archetype gives each stage a range as a multiple of the step's tensor-core math time, from
what such training does (see docs/familyi.md): LLM pre-training with FSDP hides its all-gathers
and reduce-scatters under backward; tensor/pipeline-parallel LLMs put NVLink collectives on the
critical path and add pipeline bubbles; recommendation models spend their time in embedding
lookups (HBM-bound) and all-to-all exchanges; vision and video jobs decode JPEG/video on the CPU;
speech jobs compute filterbanks on the CPU; diffusion is compute-heavy with light input.

A job is drawn for a target class; the target's stage grows until the step model (``stages``) says
its removal saves the most, and the label is what the model then says, never the target itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyi.plan import Plan
from bottleneck_operator_dev.familyi.stages import Stages, label_of

Range = tuple[float, float]


@dataclass(frozen=True)
class Archetype:
    """Stage ranges as multiples of the math time (0, 0 for none)."""

    name: str
    read: Range
    decode: Range
    launch: Range
    h2d: Range
    hbm: Range
    intra: Range
    inter: Range
    bubble: Range
    overlap: Range
    tensor_eff: Range  # tensor-pipe activity while math kernels run (1.0 = an instruction every other cycle)
    fb_used: Range  # framebuffer share the caching allocator holds


# One row per archetype; columns as Archetype's fields (a table reads better unwrapped).
# fmt: off
ARCHETYPES: tuple[Archetype, ...] = (
    Archetype("llm-pretrain-fsdp", (0.002, 0.02), (0.01, 0.05), (0.01, 0.05), (0.001, 0.01), (0.15, 0.35),
              (0.2, 0.6), (0.3, 1.2), (0.0, 0.0), (0.6, 0.9), (0.45, 0.8), (0.85, 0.99)),
    Archetype("llm-tp-pp", (0.002, 0.02), (0.01, 0.05), (0.01, 0.04), (0.001, 0.01), (0.15, 0.35),
              (0.3, 0.8), (0.1, 0.4), (0.05, 0.3), (0.1, 0.3), (0.45, 0.8), (0.85, 0.99)),
    Archetype("llm-finetune-lora", (0.005, 0.04), (0.02, 0.1), (0.02, 0.08), (0.002, 0.02), (0.2, 0.5),
              (0.02, 0.1), (0.02, 0.15), (0.0, 0.0), (0.5, 0.9), (0.35, 0.7), (0.6, 0.97)),
    Archetype("llm-zero-offload", (0.005, 0.03), (0.02, 0.08), (0.02, 0.06), (0.2, 0.6), (0.2, 0.4),
              (0.1, 0.3), (0.1, 0.5), (0.0, 0.0), (0.4, 0.8), (0.35, 0.7), (0.7, 0.97)),
    Archetype("recsys-embeddings", (0.1, 0.6), (0.2, 0.8), (0.02, 0.1), (0.05, 0.2), (0.5, 1.5),
              (0.1, 0.4), (0.3, 1.0), (0.0, 0.0), (0.1, 0.3), (0.15, 0.45), (0.7, 0.98)),
    Archetype("vision-jpeg", (0.1, 0.6), (0.3, 1.5), (0.02, 0.1), (0.02, 0.1), (0.15, 0.4),
              (0.05, 0.2), (0.1, 0.4), (0.0, 0.0), (0.7, 0.95), (0.3, 0.7), (0.4, 0.95)),
    Archetype("video-decode", (0.2, 1.0), (0.5, 2.0), (0.02, 0.08), (0.05, 0.2), (0.15, 0.4),
              (0.05, 0.2), (0.1, 0.4), (0.0, 0.0), (0.6, 0.9), (0.3, 0.65), (0.5, 0.97)),
    Archetype("speech-asr", (0.1, 0.5), (0.3, 1.0), (0.03, 0.12), (0.02, 0.08), (0.2, 0.5),
              (0.05, 0.25), (0.1, 0.4), (0.0, 0.0), (0.6, 0.9), (0.25, 0.6), (0.5, 0.95)),
    Archetype("diffusion", (0.05, 0.3), (0.1, 0.5), (0.01, 0.05), (0.01, 0.05), (0.15, 0.35),
              (0.1, 0.3), (0.2, 0.6), (0.0, 0.0), (0.7, 0.95), (0.4, 0.75), (0.7, 0.99)),
)
# fmt: on

# Which archetypes plausibly show each (class, mechanism); the weights of ARCHETYPES' order.
_AFFINITY: dict[str, tuple[float, ...]] = {
    "IO": (0.03, 0.0, 0.05, 0.0, 0.2, 0.25, 0.2, 0.17, 0.1),
    "CPU": (0.0, 0.0, 0.05, 0.0, 0.2, 0.3, 0.2, 0.2, 0.05),
    "Interconnect": (0.25, 0.2, 0.0, 0.15, 0.2, 0.05, 0.0, 0.05, 0.1),
    "GPU": (0.2, 0.1, 0.15, 0.05, 0.05, 0.15, 0.05, 0.1, 0.15),
    "hbm-bandwidth": (0.05, 0.0, 0.3, 0.1, 0.45, 0.0, 0.0, 0.05, 0.05),
    "host-memory-pressure": (0.1, 0.0, 0.1, 0.25, 0.25, 0.1, 0.05, 0.1, 0.05),
}

# The stage a (class, mechanism) grows.
_GROW: dict[str, str] = {
    Mechanism.LOCAL_DISK.value: "read",
    Mechanism.NETWORK_STORAGE.value: "read",
    Bottleneck.CPU.value: "decode",
    Mechanism.PCIE.value: "h2d",
    Mechanism.NVLINK.value: "intra",
    Mechanism.NETWORK.value: "inter",
    Mechanism.COMPUTE.value: "math",
    Mechanism.LAUNCH_BOUND.value: "launch",
    Mechanism.HBM_BANDWIDTH.value: "hbm",
    Mechanism.HOST_MEMORY_PRESSURE.value: "host_stall",
}


def pick_archetype(rng: np.random.Generator, key: str) -> Archetype:
    """An archetype that plausibly shows the class (or the Memory mechanism) ``key``."""
    p = np.asarray(_AFFINITY[key], dtype=float)
    return ARCHETYPES[int(rng.choice(len(ARCHETYPES), p=p / p.sum()))]


def _u(rng: np.random.Generator, r: Range) -> float:
    lo, hi = r
    return float(rng.uniform(lo, hi)) if hi > lo else lo


def base_stages(rng: np.random.Generator, arch: Archetype, plan: Plan) -> Stages:
    """The archetype's step on this plan before any stage is made to dominate."""
    math = float(np.exp(rng.uniform(np.log(0.08), np.log(1.5))))
    accum = plan.accumulation if arch.name.startswith("llm") else 1
    intra = _u(rng, arch.intra) * math / accum if plan.gpus > 1 else 0.0
    if plan.gpus > 1 and plan.board.nvlink_bps == 0:
        intra *= 4.0  # the same bytes over PCIe through the host bridge instead of NVLink
    inter = _u(rng, arch.inter) * math / accum if plan.pods > 1 else 0.0
    mild_stall = _u(rng, (0.0, 0.06)) * math if rng.random() < 0.15 else 0.0
    return Stages(
        read=_u(rng, arch.read) * math,
        decode=_u(rng, arch.decode) * math,
        launch=_u(rng, arch.launch) * math,
        h2d=_u(rng, arch.h2d) * math,
        math=math,
        hbm=_u(rng, arch.hbm) * math,
        intra=intra,
        inter=inter,
        bubble=_u(rng, arch.bubble) * math,
        host_stall=mild_stall,
        overlap=_u(rng, arch.overlap),
        pinned=bool(rng.random() < 0.75),
        loader_stall=_u(rng, (0.2, 0.9)),
    )


def grow_to(rng: np.random.Generator, stages: Stages, mechanism: str, target: Bottleneck) -> Stages:
    """Grow the mechanism's stage until the step model labels the job ``target``, then by a margin.

    Most jobs end moderately or clearly bound; about one in five is left borderline (the target
    only just ahead), as mixed jobs are on real clusters.
    """
    name = _GROW[mechanism]
    if name == "h2d" and rng.random() < 0.6:
        stages = replace(stages, pinned=False)  # pageable copies: the classic synchronous H2D
    if name == "math":
        stages = _shrink_others(rng, stages)
    value = max(getattr(stages, name), 0.02 * stages.math)
    below = 0.0
    for _ in range(40):
        if _reached(stages, name, target):
            break
        below, value = value, value * 1.25
        stages = replace(stages, **{name: value})
    for _ in range(8 if below else 0):  # close in on the point where the target just takes the lead
        mid = 0.5 * (below + value)
        if _reached(replace(stages, **{name: mid}), name, target):
            value = mid
        else:
            below = mid
    stages = replace(stages, **{name: value})
    borderline = rng.random() < 0.2
    extra = _u(rng, (1.0, 1.08)) if borderline else float(np.exp(rng.uniform(np.log(1.1), np.log(3.0))))
    grown = replace(stages, **{name: getattr(stages, name) * extra})
    return grown if _reached(grown, name, target) else stages


def _reached(stages: Stages, name: str, target: Bottleneck) -> bool:
    """The step model labels the job ``target`` and the grown stage leads its class's stages."""
    if label_of(stages)[0] is not target:
        return False
    mates = {
        "launch": stages.math,
        "math": stages.launch,
        "hbm": stages.host_stall,
        "host_stall": stages.hbm,
        "h2d": max(stages.intra, stages.inter),
        "intra": max(stages.exposed_h2d(), stages.inter),
        "inter": max(stages.exposed_h2d(), stages.intra),
    }
    own = stages.exposed_h2d() if name == "h2d" else getattr(stages, name)
    return bool(own >= mates.get(name, 0.0))


def _shrink_others(rng: np.random.Generator, stages: Stages) -> Stages:
    """A compute-bound job's other stages fit inside its math (what makes it compute-bound in practice)."""
    k = _u(rng, (0.3, 0.9))
    return replace(
        stages,
        read=stages.read * k,
        decode=stages.decode * k,
        intra=stages.intra * k,
        inter=stages.inter * k,
        host_stall=0.0,
    )


_RIVALS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("decode", "math", "inter"),
    Bottleneck.CPU: ("read", "math", "host_stall"),
    Bottleneck.INTERCONNECT: ("math", "hbm", "decode"),
    Bottleneck.GPU: ("decode", "read", "inter", "hbm", "intra"),
    Bottleneck.MEMORY: ("math", "decode", "inter"),
}


def add_rival(rng: np.random.Generator, stages: Stages, target: Bottleneck) -> tuple[Stages, str | None]:
    """Sometimes grow a stage of another class to just short of taking the lead: a mixed job.

    About a third of the jobs get a rival; the rival stops at 75-97 % of the size that would flip
    the label, so the label (still the step model's) holds with a thin margin.
    """
    if rng.random() >= 0.35:
        return stages, None
    name = str(rng.choice(_RIVALS[target]))
    if name in ("inter", "intra") and getattr(stages, name) == 0.0:
        return stages, None
    lo, hi = getattr(stages, name), max(getattr(stages, name), 0.02 * stages.math)
    for _ in range(30):
        if label_of(replace(stages, **{name: hi}))[0] is not target:
            break
        lo, hi = hi, hi * 1.5
    else:
        return stages, None
    for _ in range(10):
        mid = 0.5 * (lo + hi)
        if label_of(replace(stages, **{name: mid}))[0] is target:
            lo = mid
        else:
            hi = mid
    rival = replace(stages, **{name: lo * _u(rng, (0.75, 0.97))})
    return (rival, name) if label_of(rival)[0] is target else (stages, None)
