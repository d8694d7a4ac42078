"""Family Q: the public entry, one labelled job window per draw.

Job ``i`` is drawn from its own generator seeded ``(seed, i)``; the class order is a shuffle of
equal counts drawn from a generator of the seed alone. A draw whose window, read back through the
step model, is not bound by the stage its mechanism names is drawn again from the same generator,
so the label always comes from the step model and the classes stay balanced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyq.design import MECHANISMS, Mechanism, Plan, draw_plan, draw_strength
from bottleneck_operator_dev.familyq.exporters import Stack, draw_stack, observe
from bottleneck_operator_dev.familyq.gpu import gpu_signals
from bottleneck_operator_dev.familyq.host import Truth, pod_truths
from bottleneck_operator_dev.familyq.stages import STAGES
from bottleneck_operator_dev.familyq.timeline import Timeline, draw_timeline, window_label

CLASSES: tuple[Bottleneck, ...] = (
    Bottleneck.IO,
    Bottleneck.CPU,
    Bottleneck.INTERCONNECT,
    Bottleneck.GPU,
    Bottleneck.MEMORY,
)
NAMESPACES = ("llm-pretrain", "ml-research", "recsys-prod", "vision-team", "speech-lab", "genai")
MAX_DRAWS = 400
# Drawn mixed; weakly bound jobs come out mixed by themselves too, which brings the whole to about a third.
MIXED_DRAW = 0.2


@dataclass(frozen=True)
class FamilyQJob:
    """One labelled job window of family Q.

    Attributes:
        namespace, name: the Job.
        label: the class of the stage whose removal shortens the window's steps most.
        mechanism: how that stage came to bound the step (see docs/familyq.md).
        tags: what else is true of the job (workload, board, field set, mixing, phases, ...).
        window: the telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def generate_family_q(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyQJob]:
    """``n`` labelled job windows, the five classes in equal numbers (as near as ``n`` allows), shuffled.

    Args:
        seed: the family's seed; the same seed gives the same jobs.
        n: number of jobs.
        start: every window's first timestamp, unix seconds.
        step: seconds between window timestamps.

    Raises:
        ValueError: ``n`` is negative or ``step`` not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, got n={n}, step={step}")
    order = [CLASSES[i % len(CLASSES)] for i in range(n)]
    np.random.default_rng([seed, 2**31 - 1]).shuffle(order)  # type: ignore[arg-type]
    memory_seen = 0
    jobs = []
    for i, cls in enumerate(order):
        host_memory = cls is Bottleneck.MEMORY and memory_seen % 2 == 1
        memory_seen += cls is Bottleneck.MEMORY
        jobs.append(_job(np.random.default_rng([seed, i]), i, cls, host_memory, start, step))
    return jobs


def _mechanism(rng: np.random.Generator, cls: Bottleneck, host_memory: bool) -> Mechanism:
    options = [m for m in MECHANISMS if m.label is cls]
    if cls is Bottleneck.MEMORY:
        options = [m for m in options if (m.name != "hbm-bound-kernels") == host_memory]
    return options[int(rng.integers(len(options)))]


def _job(rng: np.random.Generator, i: int, cls: Bottleneck, host_memory: bool, start: float, step: float) -> FamilyQJob:
    strength, mixed = draw_strength(rng), bool(rng.random() < MIXED_DRAW)
    for attempt in range(MAX_DRAWS):
        if attempt % 12 == 11:  # some pairings cannot be that close or that weak: draw those again too
            strength, mixed = draw_strength(rng), bool(rng.random() < MIXED_DRAW)
        mech = _mechanism(rng, cls, host_memory)
        plan = draw_plan(rng, mech, strength, mixed)
        samples = int(rng.integers(20, 121))
        tl = draw_timeline(rng, plan.stages, plan.sharp, samples, step)
        label, stage, ratio, saved = window_label(tl, plan.sharp)
        if label is cls and stage == mech.stage:
            break
    else:
        raise RuntimeError(f"family Q job {i}: no draw bound by {cls}")  # pragma: no cover - a bug in the model
    stack = draw_stack(rng, samples, plan.cpu_limit is not None, plan.fabric is not None and plan.fabric.rdma)
    name = f"fq-{plan.workload}-{i:04d}"
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    pods = tuple(_pod(rng, plan, tl, stack, name, k, start, step) for k in range(plan.pods))
    timestamps = start + np.arange(samples, dtype=np.float64) * step
    families, coverage = families_and_coverage(pods)
    notes = ("no PROF fields",) if stack.field_set == "dev-only" else ()
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=stack.interval, notes=notes)
    window = JobWindow(namespace, name, start, float(timestamps[-1]), step, timestamps, pods, quality)
    share = float(saved[stage] / max(tl.stepping.sum(), 1e-9))
    tags = _tags(plan, tl, stack, ratio, share, saved)
    return FamilyQJob(namespace, name, label, mech.name, tags, window)


def _pod(
    rng: np.random.Generator, plan: Plan, tl: Timeline, stack: Stack, job: str, k: int, start: float, step: float
) -> PodWindow:
    """One pod: its own small spread of stage times, its GPUs, its host, then what the scrapes return."""
    own = Timeline(
        tl.phase,
        tl.stages * rng.lognormal(0.0, 0.02, tl.stages.shape[1]),
        tl.step,
        tl.stepping,
        tl.restart_at,
        tl.change,
    )
    truths: dict[str, Truth] = {name: Truth("gauge", v) for name, v in gpu_signals(plan, own, rng, step).items()}
    truths.update(pod_truths(plan, own, rng))
    resets = tuple(start + (at - float(rng.uniform(0.1, 0.9))) * step for at in tl.restart_at)
    signals = observe(truths, stack, start, step, resets, rng)
    block = SignalBlock.of(signals, len(tl.phase))
    gpus = plan.gpus if any(name in signals for name in ("gpu_util", "gr_engine_active")) else 0
    pod = f"{job}-worker-{k}" if plan.pods > 1 else f"{job}-{int(rng.integers(16**5)):05x}"
    node = f"gpu-{plan.board.model.split()[-1].lower()}-{int(rng.integers(1000)):03d}"
    return PodWindow(pod, node, plan.board.model, gpus, block, co_located_pods=plan.neighbours)


def _tags(plan: Plan, tl: Timeline, stack: Stack, ratio: float, share: float, saved: np.ndarray) -> tuple[str, ...]:
    """Facts about the job a reader of an evaluation would want to slice by."""
    speed = 1.0 / max(1.0 - share, 1e-6)
    tags = [
        f"workload:{plan.workload}",
        f"board:{plan.board.model}",
        f"dcgm:{stack.field_set}",
        f"scrape:{int(stack.interval)}s",
        f"storage:{plan.storage.name}",
        f"fabric:{plan.fabric.name if plan.fabric else 'none'}",
        f"gpus:{plan.gpus * plan.pods}",
        "strength:" + ("barely" if speed < 1.2 else "moderate" if speed < 2.0 else "strong"),
    ]
    if ratio >= 0.8:
        runner = int(np.argsort(saved)[::-1][1])
        tags.append(f"mixed:{STAGES[runner]}")
    if plan.power_cap < plan.board.tdp_w:
        tags.append("power-capped")
    if plan.neighbours:
        tags.append("shared-node")
    if plan.cpu_limit is not None:
        tags.append("cpu-limit")
    if tl.restart_at:
        tags.append("container-restart")
    if tl.change is not None:
        tags.append(f"change:{tl.change[0]}")
    if stack.gap is not None:
        tags.append(f"exporter-gap:{stack.gap[0]}")
    return tuple(tags)
