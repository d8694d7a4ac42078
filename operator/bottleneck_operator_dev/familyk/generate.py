"""Family K: the public entry. One job per index, each from its own generator seeded (seed, i)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyk.gpu import gpu_signals
from bottleneck_operator_dev.familyk.host import node_signals, pod_cpu, pod_io_memory
from bottleneck_operator_dev.familyk.lanes import Arr, job_lanes
from bottleneck_operator_dev.familyk.observe import draw_exporters, observe
from bottleneck_operator_dev.familyk.plan import MECHANISMS, Plan, draw_plan

NAMESPACES = ("ml-research", "team-vision", "llm-train", "recsys-prod", "speech", "batch")
# Signals that stop while a checkpoint is written (the GPUs idle, the links quiet).
PAUSED = (
    "gpu_util", "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active",
    "mem_copy_util", "fp16_active", "fp32_active", "pcie_rx_bps", "nvlink_rx_bps", "nvlink_tx_bps",
    "nvlink_total_bps", "ib_rx_bps", "ib_tx_bps", "fs_read_bps", "sc_io_read_bps", "node_disk_read_bps",
)  # fmt: skip


@dataclass(frozen=True)
class FamilyKJob:
    """One labelled job of family K.

    Attributes:
        namespace, name: the Job's.
        label: the class of the stage whose removal shortens the step most (the step model's).
        mechanism: how that stage limits it (family K's own words).
        tags: the variety the job carries (board, field set, fabric, strength, ...).
        window: the telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _targets(seed: int, n: int) -> list[int]:
    """Mechanism rows for n jobs: the five classes in equal numbers (within one), in shuffled order."""
    by_class = {c: [i for i, row in enumerate(MECHANISMS) if row[0] is c] for c in CLASSES}
    rows = []
    for k in range(n):
        cls = CLASSES[k % len(CLASSES)]
        options = by_class[cls]
        rows.append(options[(k // len(CLASSES)) % len(options)])
    order = np.random.default_rng((seed, n)).permutation(n)
    return [rows[int(j)] for j in order]


def generate_family_k(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyKJob]:
    """``n`` labelled jobs whose windows start at ``start`` on a ``step``-second grid.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, got n={n}, step={step}")
    return [_job(seed, i, row, start, step) for i, row in enumerate(_targets(seed, n))]


def _job(seed: int, i: int, row: int, start: float, step: float) -> FamilyKJob:
    rng = np.random.default_rng((seed, i))
    plan = draw_plan(rng, row)
    samples = int(rng.integers(20, 121))
    c = plan.cluster
    ex = draw_exporters(rng, samples, rdma=c.fabric is not None and c.fabric.rdma, cpu_limit=c.cpu_limit is not None)
    lanes = job_lanes(rng, plan, samples)
    pauses = _pauses(rng, samples, step)
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"{plan.workload}-{seed % 1000:03d}-{i:04d}"
    shared = len(c.boards) if c.nodes_shared else 1
    pods = []
    for k, (board, gpus, pod_lanes) in enumerate(zip(c.boards, c.gpus, lanes, strict=True)):
        true = gpu_signals(rng, plan, pod_lanes, board, gpus)
        true.update(pod_cpu(rng, plan, pod_lanes, gpus))
        true.update(pod_io_memory(rng, plan, pod_lanes))
        true.update(node_signals(rng, plan, pod_lanes, true["cpu_cores"], shared))
        _apply_pauses(true, pauses, board.idle_w)
        signals = observe(rng, true, ex, step)
        node = f"gpu-node-{seed % 97:02d}-{i % 500:03d}-{0 if c.nodes_shared else k}"
        pods.append(
            PodWindow(
                pod=f"{name}-worker-{k}",
                node=node,
                gpu_model=board.model,
                gpu_count=gpus,
                signals=SignalBlock.of(signals, samples),
                co_located_pods=c.neighbours + (shared - 1),
            )
        )
    families, coverage = families_and_coverage(pods)
    stamps = start + step * np.arange(samples, dtype=np.float64)
    window = JobWindow(
        namespace=namespace,
        job=name,
        start=start,
        end=float(stamps[-1]),
        step=step,
        timestamps=stamps,
        pods=tuple(pods),
        quality=DataQuality(families=families, coverage=coverage, scrape_interval=ex.scrape),
    )
    tags = _tags(plan, ex.field_set, ex.scrape, bool(pauses.any()), tuple(ex.restarts), families)
    return FamilyKJob(namespace, name, plan.label, _mechanism(plan), tags, window)


def _pauses(rng: np.random.Generator, samples: int, step: float) -> Arr:
    """Share of each sample spent writing a checkpoint (0 for most samples, most jobs)."""
    paused = np.zeros(samples)
    if rng.random() < 0.4:
        every = max(3, int(rng.uniform(600.0, 1800.0) / step))
        length = rng.uniform(20.0, 240.0)
        for at in range(int(rng.integers(0, every)), samples, every):
            left, k = length, at
            while left > 0 and k < samples:
                paused[k] = min(1.0, left / step)
                left -= step
                k += 1
    return paused


def _apply_pauses(true: dict[str, Arr], paused: Arr, idle_w: float) -> None:
    if not paused.any():
        return
    run = 1.0 - paused
    for name in PAUSED:
        true[name] = true[name] * run
    true["power_w"] = idle_w + (true["power_w"] - idle_w) * run
    true["cpu_cores"] = true["cpu_cores"] * run + paused * 1.0
    true["sc_cpu_cores"] = true["sc_cpu_cores"] * run + paused * 1.0
    true["node_net_tx_bps"] = true["node_net_tx_bps"] + paused * 5e8  # the checkpoint leaves for remote storage


def _mechanism(plan: Plan) -> str:
    """The target's mechanism; for links, the link that carries most of the added time."""
    if plan.mechanism != "network" and plan.mechanism != "nvlink-or-p2p":
        return plan.mechanism
    if plan.intra_comm_share < 0.5:
        fabric = plan.cluster.fabric
        return "network-rdma" if fabric is not None and fabric.rdma else "network-tcp"
    return "nvlink" if plan.cluster.boards[0].nvlink_gbs else "pcie-p2p"


def _tags(
    plan: Plan, field_set: str, scrape: float, paused: bool, restarts: tuple[str, ...], families: frozenset[object]
) -> tuple[str, ...]:
    c = plan.cluster
    tags = [
        f"workload:{plan.workload}",
        f"board:{c.boards[0].model}",
        f"dcgm:{field_set}",
        f"scrape:{scrape:g}s",
        f"storage:{c.storage.name}",
        f"fabric:{c.fabric.name if c.fabric else 'single-node'}",
        "strength:moderate" if plan.speedup < 1.5 else "strength:strong",
        f"speedup:{plan.speedup:.2f}",
        f"stage:{next(row[2] for row in MECHANISMS if row[1] == plan.mechanism)}",
    ]
    tags += ["mixed-boards"] * (len(set(c.boards)) > 1) + ["uneven-pods"] * (len(set(c.gpus)) > 1)
    tags += ["neighbours"] * (c.neighbours > 0) + ["checkpoint-pauses"] * paused
    tags += ["power-capped"] * (c.power_cap_frac < 1.0) + ["borderline"] * (plan.runner_up > plan.speedup / 1.15)
    tags += [f"restart:{r}" for r in restarts] + ["amp"] * plan.amp + [f"families:{len(families)}"]
    return tuple(tags)
