"""Family I: jobs drawn from a step model, seen through a real cluster's exporters.

Entry point :func:`generate_family_i`. Job ``i`` of a family is drawn from its own generator seeded
``(seed, i)`` for the class its place in the shuffled order gives it (that order depends on the seed
and ``n``); the label is still the step model's answer for what was drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import (
    DataQuality,
    JobWindow,
    PodWindow,
    SignalBlock,
    families_and_coverage,
)
from bottleneck_operator_dev.familyi.exporters import Stack, draw_stack
from bottleneck_operator_dev.familyi.gpu import gpu_levels
from bottleneck_operator_dev.familyi.host import draw_memory, host_levels
from bottleneck_operator_dev.familyi.job import Draft, draft
from bottleneck_operator_dev.familyi.scrape import FloatArray
from bottleneck_operator_dev.familyi.series import Level, read

NAMESPACES = ("ml-research", "llm-platform", "recsys", "vision", "speech", "genai", "team-a", "batch")


@dataclass(frozen=True)
class FamilyIJob:
    """One labelled job of family I.

    Attributes:
        namespace, name: the Job's.
        label: the class whose removal would shorten the step most, by the step model.
        mechanism: how it limits the step (a :class:`Mechanism` value).
        tags: what the job is and what its telemetry went through (workload, storage, field set, ...).
        window: its telemetry as the data layer hands it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def class_order(seed: int, n: int) -> list[tuple[Bottleneck, str]]:
    """The classes of jobs 0..n-1: equal numbers (within one), shuffled; Memory alternates its two mechanisms."""
    rng = np.random.default_rng([seed, 0x46, 0x49])
    classes = [CLASSES[k % len(CLASSES)] for k in range(n)]
    order = [classes[int(j)] for j in rng.permutation(n)]
    out: list[tuple[Bottleneck, str]] = []
    memory = 0
    for cls in order:
        mech = ""
        if cls is Bottleneck.MEMORY:
            mech = (Mechanism.HOST_MEMORY_PRESSURE if memory % 2 == 0 else Mechanism.HBM_BANDWIDTH).value
            memory += 1
        out.append((cls, mech))
    return out


def generate_family_i(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyIJob]:
    """``n`` labelled jobs, every window starting at ``start`` on a grid of ``step`` seconds.

    Args:
        seed: the family's seed; job ``i`` is drawn from a generator seeded ``(seed, i)``.
        n: number of jobs (the five classes in equal numbers, within one).
        start: the windows' first timestamp (unix seconds); never the clock.
        step: seconds between the windows' timestamps.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, got n={n}, step={step}")
    return [
        # the pod's own network counters draw from a generator of their own: the other signals keep their draws
        _job(np.random.default_rng([seed, i]), i, target, memory, start, step, np.random.default_rng([seed, i, 0x4E7]))
        for i, (target, memory) in enumerate(class_order(seed, n))
    ]


def _job(
    rng: np.random.Generator,
    i: int,
    target: Bottleneck,
    memory: str,
    start: float,
    step: float,
    net_rng: np.random.Generator,
) -> FamilyIJob:
    d = draft(rng, target, memory or Mechanism.HBM_BANDWIDTH.value)
    samples = int(rng.integers(20, 121))
    grid = start + step * np.arange(samples, dtype=np.float64)
    stack = draw_stack(rng, d.plan, start, float(grid[-1]))
    # Faster pods wait for the slowest at each collective; a straggler (a hot or throttled board)
    # is the slowest by a wider gap, and the stage model describes that pod.
    straggler = d.plan.pods > 1 and rng.random() < 0.12
    pace = np.ones(d.plan.pods)
    if d.plan.pods > 1:
        pace[1:] = rng.uniform(0.8, 0.92, d.plan.pods - 1) if straggler else rng.uniform(0.9, 1.0, d.plan.pods - 1)
        rng.shuffle(pace)
    levels = gpu_levels(rng, d.plan, d.stages, d.arch, pace, straggler=straggler)
    mem = draw_memory(rng, d.plan, d.stages.host_stall / d.stages.step() > 0.02)
    levels.update(host_levels(rng, d.plan, d.stages, mem, d.cores_eff))
    name = f"train-{i:04d}-{int(rng.integers(0x1000, 0xFFFF)):04x}"
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    pods = _pods(rng, name, d, stack, levels, grid, net_rng)
    families, coverage = families_and_coverage(pods)
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=d.plan.scrape["dcgm"])
    window = JobWindow(namespace, name, start, float(grid[-1]), step, grid, pods, quality)
    tags = _tags(d, stack, mem.swap) + (("straggler",) if straggler else ())
    return FamilyIJob(namespace, name, d.label, d.mechanism, tags, window)


def _pods(
    rng: np.random.Generator,
    name: str,
    d: Draft,
    stack: Stack,
    levels: dict[str, Level],
    grid: FloatArray,
    net_rng: np.random.Generator,
) -> tuple[PodWindow, ...]:
    names: list[str] = []
    rows: list[FloatArray] = []
    for signal, spec in SIGNALS.items():
        lv = levels.get(signal)
        if lv is None or spec.family not in stack.families:
            continue
        assert (lv.kind == "gauge") == (spec.kind is Kind.GAUGE), signal
        exporter = "ib" if signal.startswith("ib_") else spec.family.exporter_name
        collect = d.plan.dcgm_collect if exporter == "dcgm" else 0.0
        names.append(signal)
        rows.append(read(lv, stack.exporters[exporter], grid, stack.pauses, rng, collect=collect))
    if Family.SIDECAR in stack.families:
        # the pod's own network bytes, counted by the same sidecar on its scrapes; their noise and
        # counter offsets come from ``net_rng`` so that no other signal's draws move
        for signal in ("sc_net_rx_bps", "sc_net_tx_bps"):
            names.append(signal)
            rows.append(read(levels[signal], stack.exporters["sidecar"], grid, stack.pauses, net_rng))
    block = np.stack(rows) if rows else np.empty((0, d.plan.pods, grid.size))
    role = "worker" if d.plan.pods > 1 else "trainer"
    nodes = rng.choice(400, size=d.plan.pods, replace=False)
    return tuple(
        PodWindow(
            pod=f"{name}-{role}-{p}",
            node=f"gpu-node-{int(nodes[p]):03d}",
            gpu_model=d.plan.board.model,
            gpu_count=d.plan.gpus,
            signals=SignalBlock(names, block[:, p, :]),
            co_located_pods=d.plan.neighbours,
        )
        for p in range(d.plan.pods)
    )


def _tags(d: Draft, stack: Stack, swap: bool) -> tuple[str, ...]:
    plan = d.plan
    tags = [d.arch.name, plan.storage.kind, f"dcgm-{stack.field_set}", f"scrape-{plan.scrape['dcgm']:.0f}s"]
    tags += [plan.fabric.kind] if plan.pods > 1 else []
    tags += ["shared-node"] if plan.neighbours else []
    tags += ["power-capped"] if plan.power_cap_w < plan.board.tdp_w else []
    tags += ["cpu-limit"] if plan.cpu_limit is not None else []
    tags += [f"grad-accum-{plan.accumulation}"] if plan.accumulation > 1 and d.arch.name.startswith("llm") else []
    tags += ["pageable-h2d"] if not d.stages.pinned else []
    tags += ["mmap-dataset"] if plan.mmap_dataset else []
    tags += ["page-cache"] if plan.cache_hit > 0 else []
    tags += ["swap"] if swap else []
    tags += [f"mixed-{d.rival}"] if d.rival else []
    tags += ["borderline"] if d.margin < 0.05 else (["moderate"] if d.margin < 0.25 else [])
    return tuple(tags) + stack.tags
