"""Family E: labelled job windows for one honest evaluation, generated deterministically per seed.

Job ``i`` comes from its own generator seeded ``(seed, i)``; the class of each position comes from
a shuffle seeded by ``seed`` alone, with the five classes in equal numbers (and Memory split evenly
between host memory pressure and HBM bandwidth). Every window starts at ``start`` and lies on the
``step`` grid; nothing reads the clock, the network or a file.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familye.activity import gpu_levels, gpu_power, host_levels
from bottleneck_operator_dev.familye.exporters import sample
from bottleneck_operator_dev.familye.gpuseries import dcgm_gauges
from bottleneck_operator_dev.familye.hostseries import pod_rows
from bottleneck_operator_dev.familye.nodeseries import node_rows, pod_net_rows
from bottleneck_operator_dev.familye.phases import timeline
from bottleneck_operator_dev.familye.stepmodel import speedups
from bottleneck_operator_dev.familye.workloads import Plan, draw_plan

NAMESPACES = (
    "ml-vision",
    "llm-pretrain",
    "recsys-prod",
    "speech-research",
    "genai",
    "research",
    "ml-platform",
    "perception",
)
MECHANISMS = {
    Bottleneck.IO: (("local-disk", "network-storage"), (0.5, 0.5)),
    Bottleneck.CPU: (("throttled", "saturated", "too-few-workers"), (0.4, 0.3, 0.3)),
    Bottleneck.INTERCONNECT: (("network", "pcie", "nvlink"), (0.55, 0.3, 0.15)),
    Bottleneck.GPU: (("compute",), (1.0,)),
}
HARD_SHARE = 0.2
OWN_NET = 0x4E7  # added to a job's seed tuple for the generator of its pods' own network bytes
ATTEMPTS = 80


@dataclass(frozen=True)
class FamilyEJob:
    """One labelled job of family E.

    Attributes:
        namespace, name: the Job's namespace and name.
        label: the class whose stages, made free, shorten the step the most.
        mechanism: how that class limits the job (the contract's mechanism names).
        tags: what was drawn (board, storage, fabric, scrape interval, quirks, "hard", ...).
        window: the telemetry, as the data layer would hand it to the analysis.
        speedups: per class, how much faster the step would be without that class's stages.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow
    speedups: tuple[tuple[Bottleneck, float], ...] = ()


def class_order(seed: int, n: int) -> list[Bottleneck]:
    """The class of each position: equal numbers (the remainder to the first classes), shuffled by ``seed``."""
    counts = [n // len(CLASSES) + (1 if i < n % len(CLASSES) else 0) for i in range(len(CLASSES))]
    order = [c for c, k in zip(CLASSES, counts, strict=True) for _ in range(k)]
    perm = np.random.default_rng([seed, 0x0E]).permutation(n)
    return [order[int(j)] for j in perm]


def _mechanism(rng: np.random.Generator, cls: Bottleneck, memory_ordinal: int) -> str:
    if cls is Bottleneck.MEMORY:
        return "host-memory-pressure" if memory_ordinal % 2 == 0 else "hbm-bandwidth"
    names, weights = MECHANISMS[cls]
    return str(rng.choice(names, p=weights))


def _plan(rng: np.random.Generator, cls: Bottleneck, mech: str, duration: float) -> Plan:
    hard = bool(rng.random() < HARD_SHARE)
    for attempt in range(ATTEMPTS):
        plan = draw_plan(rng, cls, mech, duration, hard=hard and attempt < ATTEMPTS // 2)
        if plan is not None:
            return plan
    raise RuntimeError(f"no {cls.value}/{mech} job after {ATTEMPTS} draws")  # a generator bug, not bad input


def _names(rng: np.random.Generator, plan: Plan, i: int) -> tuple[str, str, list[str], list[str]]:
    alphabet = np.array(list(string.ascii_lowercase + string.digits))
    job = f"{plan.kind}-{plan.env.board.key}-{i:04d}"
    pods = [f"{job}-{p}-{''.join(rng.choice(alphabet, 5))}" for p in range(plan.env.pods)]
    base = int(rng.integers(100, 900))
    nodes = [f"gpu-{plan.env.board.key}-{base + k}" for k in range(plan.env.nodes)]
    return str(rng.choice(NAMESPACES)), job, pods, nodes


def _signals(
    rng: np.random.Generator,
    plan: Plan,
    start: float,
    step: float,
    n: int,
    own_rng: np.random.Generator,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every signal the job's exporters would give, (P, n) each, before the family filter.

    The pod's own network bytes (the collector's) draw from ``own_rng`` alone: no other draw moves.
    """
    stamps = start + step * np.arange(n, dtype=np.float64)
    tl = timeline(rng, plan, start, float(stamps[-1]), step)
    g, h = gpu_levels(rng, plan), host_levels(rng, plan)
    pw = gpu_power(rng, plan, g)
    pods = pod_rows(rng, plan, h, tl)
    node = node_rows(rng, plan, h, g, pods, tl)
    out: dict[str, np.ndarray] = {}
    groups = (
        ("dcgm", dcgm_gauges(rng, plan, g, pw, tl)),
        ("cadvisor", pods["cadvisor"]),
        ("ksm", pods["ksm"]),
        ("sidecar", pods["sidecar"]),
        ("node", node),
    )
    net = pod_net_rows(plan, h, g, tl)
    for exporter, rows in groups:
        more = (net, own_rng) if exporter == "sidecar" else None
        got = sample(rng, plan, exporter, rows, tl, stamps, step, more)
        if exporter == "node":
            got = {k: v[plan.env.node_of] for k, v in got.items()}
        out.update(got)
    return _derive(out), stamps


def _derive(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Ratios of counters and node CPU modes, as the data layer computes them; ratios kept in [0, 1]."""
    out = {k: v for k, v in raw.items() if ":" not in k}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in ("cpu_throttled_frac", "sc_throttled_frac"):
            if f"{name}:den" in raw:
                den = raw[f"{name}:den"]
                out[name] = np.where(den > 0, raw[f"{name}:num"] / den, np.nan)
        if "node_cpu:idle" in raw:
            modes = {m: raw[f"node_cpu:{m}"] for m in ("idle", "iowait", "system", "other")}
            total = sum(modes.values())
            out["node_cpu_busy_frac"] = (modes["system"] + modes["other"]) / total
            out["node_cpu_iowait_frac"] = modes["iowait"] / total
            out["node_cpu_system_frac"] = modes["system"] / total
    for k, v in out.items():
        if SIGNALS[k].unit == "ratio":
            out[k] = np.clip(v, 0.0, 1.0)
        elif k != "xid_code":
            out[k] = np.maximum(v, 0.0)
    return out


def build_job(seed: int, i: int, cls: Bottleneck, memory_ordinal: int, *, start: float, step: float) -> FamilyEJob:
    """Job ``i`` of the family for ``seed``, of class ``cls``."""
    rng = np.random.default_rng([seed, i])
    n = int(rng.integers(20, 121))
    mech = _mechanism(rng, cls, memory_ordinal)
    plan = _plan(rng, cls, mech, duration=step * (n - 1))
    namespace, job, pod_names, node_names = _names(rng, plan, i)
    signals, stamps = _signals(rng, plan, start, step, n, np.random.default_rng([seed, i, OWN_NET]))
    env = plan.env
    names = [s for s in SIGNALS if s in signals and SIGNALS[s].family in env.families]
    has_gpu = any(SIGNALS[s].family.exporter_name == "dcgm" for s in names)
    pods = tuple(
        PodWindow(
            pod=pod_names[p],
            node=node_names[int(env.node_of[p])],
            gpu_model=env.board.model_name if has_gpu else None,
            gpu_count=env.gpus if has_gpu else 0,
            signals=SignalBlock(names, np.stack([signals[s][p] for s in names])),
            co_located_pods=int(env.neighbours[int(env.node_of[p])]),
        )
        for p in range(env.pods)
    )
    families, coverage = families_and_coverage(pods)
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=env.scrape["dcgm"])
    window = JobWindow(
        namespace=namespace,
        job=job,
        start=start,
        end=float(stamps[-1]),
        step=step,
        timestamps=stamps,
        pods=pods,
        quality=quality,
    )
    ups = tuple(speedups(plan.step).items())
    return FamilyEJob(namespace, job, cls, mech, plan.tags, window, ups)


def generate_family_e(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyEJob]:
    """``n`` labelled jobs of family E for ``seed``, every window starting at ``start`` on a ``step`` grid.

    Args:
        seed: the family's seed; the same seed gives the same jobs.
        n: number of jobs; the five classes come in equal numbers (the remainder to the first ones).
        start: the windows' first timestamp, unix seconds.
        step: seconds between timestamps.

    Raises:
        ValueError: ``seed`` or ``n`` negative, ``start`` not finite or ``step`` not positive.
    """
    if seed < 0:
        raise ValueError(f"seed must be >= 0, not {seed}")
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not math.isfinite(start):
        raise ValueError(f"start must be a finite unix time, not {start}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    order = class_order(seed, n)
    jobs = []
    memory_seen = 0
    for i, cls in enumerate(order):
        jobs.append(build_job(seed, i, cls, memory_seen, start=start, step=step))
        memory_seen += cls is Bottleneck.MEMORY
    return jobs
