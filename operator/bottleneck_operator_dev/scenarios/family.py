"""The second scenario family's generator: seeded jobs with their windows and ground truth.

Most jobs run alone on their nodes (beside unprofiled neighbours); some come as two profiled Jobs
sharing one node, and a share of those also share one GPU by time-slicing, where every sharing pod
sees the same DCGM values (dcgm-exporter issues 587, 642).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.scenarios.plans import HOST_MEMORY, Plan, draw_plan, with_extras
from bottleneck_operator_dev.scenarios.render import (
    Exporters,
    Sampling,
    draw_exporters,
    draw_extra_exporters,
    gpu_signals,
    node_signals,
    pod_signals,
)
from bottleneck_operator_dev.scenarios.ticks import BLOCKING, LOCAL_STORAGE, TICK, F, Ticks, phases, pod_ticks

PAIR_SHARE = 0.15
POD_NET_STREAM = 0x4E7  # seeds, with a group's seed, the generator of its pods' own network bytes
TIME_SLICED_SHARE = 0.4  # of the pairs whose pods have one GPU each


@dataclass(frozen=True)
class ScenarioJob:
    """One job of the family: its window and what truly bounds it.

    Attributes:
        label: the bounding class (from the stage times, see ``stages.truth``).
        mechanism: why, in one word ("launch-bound", "object-store", "too-few-workers", ...).
        margin: how far the bound stage's gain is ahead of the runner-up's (ratio - 1).
        tags: hardware and situation tags ("gpudirect", "mig", "num-workers-0", "shared-node", ...).
        partner: the other profiled Job on the same node, or None.
        window: the job's window.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    margin: float
    tags: tuple[str, ...]
    partner: str | None
    window: JobWindow

    def to_window(self) -> JobWindow:
        return self.window


@dataclass
class _Placed:
    plan: Plan
    name: str
    ticks: Ticks
    node_of_pod: tuple[int, ...]  # index into the group's nodes


def generate_family(
    seed: int, n: int, *, start: float, duration: float = 900.0, step: float = 30.0, namespace: str = "ml"
) -> list[ScenarioJob]:
    """``n`` jobs, classes cycled in shuffled rounds; the same arguments give the same jobs.

    Args:
        seed: the seed.
        n: number of jobs (a pair counts as two).
        start / duration: the window every job is observed over (unix seconds).
        step: seconds between window timestamps.
        namespace: the jobs' namespace.

    Raises:
        ValueError: on a negative ``n`` or a window shorter than two steps.
    """
    if n < 0 or duration < 2 * step or step <= 0:
        raise ValueError("need n >= 0, step > 0 and a window of at least two steps")
    root = np.random.default_rng([seed, 0x5CE2])
    order: list[Bottleneck] = []
    out: list[ScenarioJob] = []
    while len(out) < n:
        while len(order) < 2:
            order += [CLASSES[int(i)] for i in root.permutation(len(CLASSES))]
        group_seed = int(root.integers(2**62))
        rng = np.random.default_rng(group_seed)
        # what came after the first signals draws from a generator of its own: every earlier draw stays
        side = np.random.default_rng([group_seed, 0x51DE])
        # and so do the pods' own network bytes, added after those
        own = np.random.default_rng([group_seed, POD_NET_STREAM])
        pair = len(out) + 2 <= n and rng.random() < PAIR_SHARE
        targets = [order.pop(0) for _ in range(2 if pair else 1)]
        out += _group((rng, side, own), targets, len(out), start, duration, step, namespace)
    return out


def _single_pod_plan(rng: np.random.Generator, label: Bottleneck) -> Plan:
    plan = draw_plan(rng, label)
    for _ in range(30):
        if plan.n_pods == 1:
            break
        plan = draw_plan(rng, label)
    return replace(plan, n_pods=1, pods_per_node=1)


def _group(
    rngs: tuple[np.random.Generator, np.random.Generator, np.random.Generator],
    targets: list[Bottleneck],
    index: int,
    start: float,
    duration: float,
    step: float,
    ns: str,
) -> list[ScenarioJob]:
    rng, side, own = rngs
    exp = draw_extra_exporters(draw_exporters(rng), side)
    pair = len(targets) == 2
    plans = [_single_pod_plan(rng, t) for t in targets] if pair else [draw_plan(rng, targets[0])]
    first = with_extras(plans[0], side)
    # a pair shares one node, whose boards share one power cap
    plans = [first, *(with_extras(p, side, power_cap=first.power_cap) for p in plans[1:])]
    # InfiniBand/RoCE adapters: on every RDMA fabric, and idle beside Ethernet collectives on some nodes
    adapters = plans[0].fabric.kind == "rdma" or bool(side.random() < 0.25)
    sliced = pair and all(p.gpus_per_pod == 1 and p.mig is None for p in plans) and rng.random() < TIME_SLICED_SHARE
    t = np.arange(start - 300.0, start + duration + TICK, TICK)
    ts = np.asarray(start + np.arange(int(duration // step) + 1) * step, dtype=np.float64)
    placed: list[_Placed] = []
    for k, plan in enumerate(plans):
        job_start = start - float(rng.uniform(-30.0, 1500.0))
        ticks = pod_ticks(plan, rng, t, phases(rng, t, job_start), side=side)
        nodes = (
            tuple(0 for _ in range(plan.n_pods)) if pair else tuple(i // plan.pods_per_node for i in range(plan.n_pods))
        )
        placed.append(_Placed(plan, f"{plan.mechanism}-{index + k:05d}", ticks, nodes))
    host = plans[0]
    n_nodes = max(max(pl.node_of_pod) for pl in placed) + 1
    s = Sampling(t, ts, step, exp, rng, side, own=own)
    neighbours = [int(rng.choice([0, 0, 1, 2, 5])) for _ in range(n_nodes)]
    node_sig = [
        node_signals(s, _node_load(rng, placed, j, neighbours[j], host), exp, cpus=host.node_cpus,
                     mem=host.node_mem_bytes, swap=any(pl.plan.swap for pl in placed), adapters=adapters)
        for j in range(n_nodes)
    ]  # fmt: skip
    shared_gpu = gpu_signals(s, _combined_gpu(placed), exp, mig=False) if sliced else None
    jobs = []
    for k, pl in enumerate(placed):
        pods = []
        for p in range(pl.plan.n_pods):
            gpu = shared_gpu or gpu_signals(
                s, {x: v[p] for x, v in pl.ticks.gpu.items()}, exp, mig=pl.plan.mig is not None
            )
            sig = {**gpu, **pod_signals(s, {x: v[p] for x, v in pl.ticks.pod.items()}, _collector(exp, pl.name),
                                        cpu_limit=pl.plan.cpu_limit, mem_limit=pl.plan.mem_limit_bytes)}  # fmt: skip
            sig.update(node_sig[pl.node_of_pod[p]])
            co = neighbours[pl.node_of_pod[p]] + (1 if pair else 0)
            gm = pl.plan.part.model_name
            pods.append(PodWindow(f"{pl.name}-{p}", f"node-{index:05d}-{pl.node_of_pod[p]}", gm,
                                  pl.plan.gpus_per_pod, SignalBlock.of(sig, len(ts)), co))  # fmt: skip
        tags = pl.plan.tags + (("shared-node",) if pair else ()) + (("time-sliced",) if sliced else ())
        window = JobWindow(ns, pl.name, float(ts[0]), float(ts[-1]), step, ts, tuple(pods), _quality(pods, exp))
        partner = placed[1 - k].name if pair else None
        jobs.append(ScenarioJob(ns, pl.name, pl.plan.label, pl.plan.mechanism, pl.plan.margin, tags, partner, window))
    return jobs


def _collector(exp: Exporters, job: str) -> Exporters:
    """The cluster's exporters as one job's pods see them: three in ten run a collector from before it
    counted busy processes. Keyed on the job's name, so the draws of every other value stay as they
    were."""
    return replace(exp, busy_processes=zlib.crc32(job.encode()) % 10 >= 3)


def _combined_gpu(placed: Sequence[_Placed]) -> dict[str, F]:
    """One GPU time-sliced between the pods: the device's counters are the sum of their work."""
    a, b = placed[0].ticks.gpu, placed[1].ticks.gpu
    idle = placed[0].plan.part.idle_w
    out = {k: np.clip(a[k][0] + b[k][0], 0.0, 1.0) for k in ("util", "sm", "gr", "tensor", "dram", "occupancy", "copy")}
    out["fb"] = np.clip(a["fb"][0] * 0.5 + b["fb"][0] * 0.5, 0.0, 0.995)
    out["power"] = np.minimum(a["power"][0] + b["power"][0] - idle, a["power_limit"][0])
    out["clock"] = np.minimum(a["clock"][0], b["clock"][0])
    for k in ("pcie_rx", "pcie_tx", "nvlink"):
        out[k] = a[k][0] + b[k][0]
    out["fp32"] = np.clip(a["fp32"][0] + b["fp32"][0], 0.0, 1.0)
    out["fp16"] = np.clip(a["fp16"][0] + b["fp16"][0], 0.0, 1.0)
    out["power_limit"] = a["power_limit"][0]  # one board
    out["slowdown"] = np.maximum(a["slowdown"][0], b["slowdown"][0])
    return out


def _node_load(
    rng: np.random.Generator, placed: Sequence[_Placed], j: int, neighbours: int, host: Plan
) -> dict[str, F]:
    n = placed[0].ticks.t.size
    load: dict[str, F] = {k: np.zeros(n) for k in ("cpu", "system", "iowait", "disk_read", "disk_reqs", "majfault",
                                                  "net_rx", "net_tx", "mem", "swap", "mem_stall", "runnable",
                                                  "io_some", "io_full", "ib")}  # fmt: skip
    ceiling = 3.5e9
    for pl in placed:
        for p, node in enumerate(pl.node_of_pod):
            if node != j:
                continue
            nd = pl.ticks.node
            for k in ("cpu", "system", "iowait", "disk_read", "majfault", "net_rx", "net_tx", "mem", "runnable", "ib"):
                load[k] = load[k] + nd[k][p]
            load["disk_reqs"] = load["disk_reqs"] + nd["disk_read"][p] / pl.plan.storage.request_bytes
            load["swap"] = np.maximum(load["swap"], nd["swap"][p])
            load["mem_stall"] = np.maximum(load["mem_stall"], nd["mem_stall"][p])
            load["io_some"] = np.maximum(load["io_some"], pl.ticks.pod["psi_io_some"][p])
            load["io_full"] = np.maximum(load["io_full"], pl.ticks.pod["psi_io_full"][p])
            if pl.plan.storage.kind in LOCAL_STORAGE:
                ceiling = pl.plan.storage.bps
    cpus = host.node_cpus
    bg = neighbours * rng.uniform(0.5, 4.0) * (1.0 + 0.2 * rng.standard_normal(n)).clip(0.2)
    load["cpu"] = load["cpu"] + np.minimum(bg, cpus * 0.4) + 0.02 * cpus
    load["runnable"] = load["runnable"] + np.minimum(bg, cpus * 0.4)
    load["net_rx"] = load["net_rx"] + neighbours * rng.uniform(1e5, 5e7)
    load["net_tx"] = load["net_tx"] + neighbours * rng.uniform(1e5, 2e7)
    load["mem"] = load["mem"] + host.node_mem_bytes * rng.uniform(0.03, 0.15) + neighbours * 4e9
    if host.mechanism == HOST_MEMORY and host.mem_limit_bytes is None:
        load["mem"] = np.maximum(load["mem"], host.node_mem_bytes * rng.uniform(0.96, 0.995))
    if any(pl.plan.storage.kind in BLOCKING and pl.plan.storage.kind in LOCAL_STORAGE for pl in placed):
        load["disk_read"] = load["disk_read"] + rng.uniform(0.0, 2e6)
    load["disk_ceiling"] = np.full(n, ceiling)
    return load


def _quality(pods: list[PodWindow], exp: Exporters) -> DataQuality:
    families, coverage = families_and_coverage(pods)
    return DataQuality(families, coverage, exp.scrape)
