"""Family AC: the interface. Jobs in blocks of five, one per class intent, each labelled by its timeline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyac.context import Context, quantities
from bottleneck_operator_dev.familyac.dcgm import dcgm_signals
from bottleneck_operator_dev.familyac.host import cadvisor_signals, sidecar_signals
from bottleneck_operator_dev.familyac.label import Label, label
from bottleneck_operator_dev.familyac.node import node_signals
from bottleneck_operator_dev.familyac.stages import Stages, build
from bottleneck_operator_dev.familyac.timeline import Timeline, simulate
from bottleneck_operator_dev.familyac.workload import MECHANISM_CHOICES, Config, draw, steer

MAX_ATTEMPTS = 30  # resampling bound when steering toward the block's class intent
NAMESPACES = ("ml-vision", "ml-nlp", "research", "recsys-prod", "speech", "platform-batch")
BLOCK_SALT = 1_000_003


@dataclass(frozen=True)
class FamilyACJob:
    """One generated Job: who it is, what bounds it (from its timeline), what was drawn, its telemetry."""

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def intent_of(seed: int, i: int) -> Bottleneck:
    """Job ``i``'s class intent: its place in its block of five, shuffled per block."""
    order = list(CLASSES)
    np.random.default_rng((seed, BLOCK_SALT, i // 5)).shuffle(order)
    return order[i % 5]


def generate_family_ac(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyACJob]:
    """``n`` Jobs of family AC, every window starting at ``start`` on a ``step``-second grid.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [_job(seed, i, float(start), float(step)) for i in range(n)]


def _draw_labelled(rng: np.random.Generator, intent: Bottleneck) -> tuple[Config, Stages, Timeline, Label, int]:
    """Draw, steer, simulate and label until the timeline agrees with the intent (or the bound is hit)."""
    choices = MECHANISM_CHOICES[intent]
    mechanism = choices[int(rng.integers(len(choices)))]
    attempt = 0
    while True:
        attempt += 1
        cfg = steer(rng, draw(rng), intent, mechanism)
        stages = build(cfg, rng)
        tail = 0.03 if cfg.storage in ("nfs", "object") else 0.005
        tl = simulate(stages, rng, workers=cfg.workers, slow_tail=tail)
        lab = label(tl, cfg.storage, stages)
        # The label follows the timeline: past the bound the last draw stands, whatever its class.
        if lab.bottleneck is intent or attempt >= MAX_ATTEMPTS:
            return cfg, stages, tl, lab, attempt


def _job(seed: int, i: int, start: float, step: float) -> FamilyACJob:
    rng = np.random.default_rng((seed, i))
    intent = intent_of(seed, i)
    cfg, stages, tl, lab, attempts = _draw_labelled(rng, intent)
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"ac-{cfg.model.kind}-{i:05d}"
    window = _window(cfg, stages, tl, rng, namespace, name, start, step)
    return FamilyACJob(
        namespace, name, lab.bottleneck, lab.mechanism.value, _tags(cfg, stages, lab, attempts, tl), window
    )


def _window(
    cfg: Config, s: Stages, tl: Timeline, rng: np.random.Generator, namespace: str, name: str, start: float, step: float
) -> JobWindow:
    """The Job's telemetry window: at least ~25 scrapes of its slowest exporter, on the step grid."""
    duration = max(25 * max(cfg.scrape, cfg.node_scrape), 30 * step) * rng.uniform(1.0, 1.5)
    grid = np.asarray(start + step * np.arange(int(duration // step) + 1), dtype=np.float64)
    end = float(grid[-1])
    reset_at = start + rng.uniform(0.2, 0.8) * (end - start) if cfg.reset else None
    ctx = Context(cfg, s, quantities(tl, s, cfg), grid, start, end, step, reset_at)
    base = rng.uniform(0, ctx.integ.period)  # data-parallel ranks step together, within milliseconds
    nodes = [f"gpu-{cfg.gpu.key.lower()}-{int(rng.integers(100, 999))}" for _ in range(cfg.nodes)]
    pods = []
    for k in range(cfg.pods):
        phases = base + rng.normal(0, 0.005, cfg.gpus_per_pod)
        here = min(cfg.pods_per_node, cfg.pods - (k // cfg.pods_per_node) * cfg.pods_per_node)
        signals = dcgm_signals(ctx, k * cfg.gpus_per_pod, phases, rng)
        signals |= cadvisor_signals(ctx, phases, rng)
        signals |= node_signals(ctx, here, phases, rng)
        if cfg.sidecar:
            signals |= sidecar_signals(ctx, phases, rng)
        block = SignalBlock.of({n: _bounded(n, signals[n]) for n in sorted(signals)})
        pods.append(
            PodWindow(
                f"{name}-{k}",
                nodes[k // cfg.pods_per_node],
                cfg.gpu.model_name,
                cfg.gpus_per_pod,
                block,
                cfg.neighbour_pods,
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = ("no PROF fields",) if cfg.field_set == "dev" else ()
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=cfg.scrape, notes=notes)
    return JobWindow(namespace, name, start, end, step, grid, tuple(pods), quality)


def _bounded(name: str, values: np.ndarray) -> np.ndarray:
    """Shares stay shares: a saturated counter's rate can come out a few ppm over one (millisecond
    rounding of sample times), which no reader should mistake for more than all of the time."""
    return np.clip(values, 0.0, 1.0) if SIGNALS[name].unit == "ratio" else values


def _tags(cfg: Config, s: Stages, lab: Label, attempts: int, tl: Timeline) -> tuple[str, ...]:
    """What was drawn, in words a reader can filter on."""
    m = cfg.model
    tags = [
        f"model={m.kind}",
        f"batch={m.batch}",
        f"precision={cfg.precision}",
        f"gpu={cfg.gpu.key}",
        f"gpus_per_pod={cfg.gpus_per_pod}",
        f"pods={cfg.pods}",
        f"nodes={cfg.nodes}",
        f"intra={cfg.intra}",
        f"fabric={cfg.fabric if cfg.nodes > 1 else 'none'}",
        f"storage={cfg.storage}",
        f"storage_mbps={cfg.storage_bw / 1e6:.0f}",
        f"workers={cfg.workers}",
        f"cpu_limit={'none' if cfg.cpu_limit is None else f'{cfg.cpu_limit:.1f}'}",
        f"cpu_source={s.cpu_source or 'none'}",
        f"memory={'pressure' if s.fault_latency > 0 else 'fits'}",
        f"swap={'yes' if cfg.swap else 'no'}",
        f"neighbour_pods={cfg.neighbour_pods}",
        f"power_cap={cfg.power_cap:.2f}",
        f"compiled={'yes' if cfg.compiled else 'no'}",
        f"scrape={cfg.scrape:.0f}",
        f"node_scrape={cfg.node_scrape:.0f}",
        f"fields={cfg.field_set}",
        f"sidecar={'yes' if cfg.sidecar else 'no'}",
        f"reset={cfg.reset or 'none'}",
        f"missing={cfg.missing:.2f}",
        f"attempts={attempts}",
        f"step_s={(tl.t1 - tl.t0) / max(tl.steps, 1):.4f}",
        *(f"share_{c.value}={v:.2f}" for c, v in lab.shares.items()),
    ]
    if tl.oom_kills:
        tags.append(f"oom_kills={tl.oom_kills}")
    if lab.hard:
        tags.append("hard")
    return tuple(tags)
