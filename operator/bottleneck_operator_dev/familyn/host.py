"""What cAdvisor, kube-state-metrics, node-exporter and the collector sidecar show of a pod's host side.

Units and meanings follow the kernel's cgroup v2 and PSI documentation and node-exporter's
collectors: pressure as the share of time some (or all) non-idle tasks stalled, CPU as cores, CFS
throttling as the share of 100 ms periods that ran out of quota, disk as bytes and requests per
second and the share of time a request was in flight. Counters are given here as their true rates;
:mod:`.scrape` turns them into counters an exporter would serve.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyn.activity import Activity
from bottleneck_operator_dev.familyn.plans import Plan

FloatArray = npt.NDArray[np.float64]
PAGE = 4096.0


def _cores(rng: np.random.Generator, plan: Plan, act: Activity) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The pod's CPU cores in use, the cores its loader could use, and CFS throttling share."""
    node_cpus = np.array([n.cpus for n in plan.nodes], dtype=np.float64)[:, None]
    limit = plan.cpu_limit if plan.cpu_limit is not None else np.inf
    room = np.minimum(node_cpus - plan.neighbour_cores[:, None] - plan.gpus * 1.2, limit)
    loader_cores = np.clip(np.minimum(float(plan.workers), room), 1.0, None)
    io_bps = act.share("io") * plan.storage.read_bps
    http = io_bps / float(rng.uniform(0.3e9, 1.0e9)) if plan.storage.kind == "object" else 0.0 * io_bps
    loader = act.share("cpu") * loader_cores + http
    offload = act.share("cpu_serial") * np.minimum(room, node_cpus * 0.8)
    reclaim = act.share("hostmem") * float(rng.uniform(0.5, 2.0))
    trainer = act.stepping * plan.gpus * float(rng.uniform(1.0, 1.3)) + act.compiling * float(rng.uniform(1.0, 4.0))
    pause = act.live * (1 - act.stepping - act.compiling) * float(rng.uniform(0.5, 2.0))
    cores = np.minimum(loader + offload + reclaim + trainer + pause + 0.05 * act.live, limit)
    throttled = np.zeros_like(cores)
    if plan.cpu_limit is not None:
        use = cores / plan.cpu_limit
        throttled = np.clip((use - 0.55) / 0.4, 0.0, 1.0) ** 1.5 * float(rng.uniform(0.75, 1.0))
        throttled = np.clip(throttled + float(rng.uniform(0.0, 0.08)) * act.stepping, 0.0, 1.0) * act.live
    return cores, loader_cores * act.live, throttled


def _memory(rng: np.random.Generator, plan: Plan, act: Activity) -> dict[str, FloatArray]:
    """Working set, limit, swap-ins, faults and OOM kills of the pod."""
    mem = np.array([n.mem_bytes for n in plan.nodes])[:, None]
    ceiling = np.full_like(mem, plan.mem_limit) if plan.mem_limit is not None else mem
    pressure = act.share("hostmem")
    tight = np.clip(pressure * 8.0, 0.0, 1.0)
    level = float(rng.uniform(0.15, 0.7))
    ws = ceiling * (level + (float(rng.uniform(0.95, 0.995)) - level) * tight) * act.live
    swap = np.array([n.swap_bytes for n in plan.nodes])[:, None] > 0
    swapin = np.where(swap, pressure * float(rng.uniform(2e4, 1e5)), 0.0)
    refault = np.where(swap, 0.0, pressure * float(rng.uniform(5e3, 4e4)))  # file pages evicted and read again
    mapped = plan.workload == "llm-mmap" or (plan.workload == "recsys" and rng.random() < 0.5)
    io_bps = act.share("io") * plan.storage.read_bps
    faults = swapin + refault + (io_bps / (PAGE * float(rng.uniform(4.0, 32.0))) if mapped else 0.0)
    kills = np.zeros_like(pressure)
    if plan.mechanism == "host-memory-pressure" and not swap.any():
        kills = act.stepping * float(rng.uniform(1 / 1800, 1 / 300))
    limit = np.full_like(ws, plan.mem_limit if plan.mem_limit is not None else np.nan)
    return {
        "mem_working_set_bytes": ws,
        "mem_limit_bytes": limit,
        "sc_swapin_ps": swapin,
        "sc_majfault_ps": faults + 0.5 * act.live,
        "sc_oom_kills": kills,
    }


def _io(rng: np.random.Generator, plan: Plan, act: Activity) -> dict[str, FloatArray]:
    """The pod's reads and the pressure they put on it."""
    io = act.share("io")
    read = io * plan.storage.read_bps
    blocked = float(rng.uniform(0.7, 1.0)) if plan.storage.iowait else float(rng.uniform(0.0, 0.03))
    some = np.clip(io * blocked + 0.01 * act.stepping, 0.0, 1.0)
    return {
        "fs_read_bps": read if plan.storage.block else 1e4 * act.live,
        "sc_io_read_bps": read if plan.storage.block else 2e4 * act.live,
        "sc_psi_io_some": some,
        "sc_psi_io_full": some * float(rng.uniform(0.2, 0.6)),
        "net_read_bps": 0.0 * read if plan.storage.block else read,
    }


def pod_truth(rng: np.random.Generator, plan: Plan, act: Activity) -> dict[str, FloatArray]:
    """cAdvisor, kube-state-metrics and sidecar signals of each pod (counters as true rates)."""
    cores, loader_cores, throttled = _cores(rng, plan, act)
    out = _memory(rng, plan, act)
    out.update(_io(rng, plan, act))
    cpu_wait = np.clip(np.maximum(throttled * rng.uniform(0.5, 0.9), act.share("cpu") ** 2), 0.0, 1.0)
    mem_some = np.clip(act.share("hostmem") * rng.uniform(0.8, 1.0), 0.0, 1.0)
    busy_loaders = np.minimum(act.share("cpu") * loader_cores, float(plan.workers))
    out.update(
        {
            "cpu_cores": cores,
            "sc_cpu_cores": cores + 0.01 * act.live,
            "cpu_throttled_frac": throttled,
            "sc_throttled_frac": throttled,
            "cpu_limit_cores": np.full_like(cores, plan.cpu_limit if plan.cpu_limit is not None else np.nan),
            "sc_psi_cpu_some": cpu_wait + 0.005 * act.live,
            "sc_psi_mem_some": mem_some,
            "sc_psi_mem_full": mem_some * float(rng.uniform(0.3, 0.7)),
            "sc_procs_running": np.round(busy_loaders + plan.gpus * act.stepping + act.compiling),
            "sc_procs_iowait": np.round(out["sc_psi_io_some"] * plan.workers * plan.storage.iowait),
            "sc_procs_busy": np.floor(busy_loaders * 0.8 + plan.gpus * act.stepping),
        }
    )
    return out


def node_truth(
    rng: np.random.Generator, plan: Plan, act: Activity, pod: dict[str, FloatArray]
) -> dict[str, FloatArray]:
    """node-exporter's view of each pod's node: the pod's share plus its neighbours'."""
    cpus = np.array([n.cpus for n in plan.nodes], dtype=np.float64)[:, None]
    mem = np.array([n.mem_bytes for n in plan.nodes])[:, None]
    ones = np.ones_like(act.live)
    neighbour = plan.neighbour_cores[:, None] * rng.uniform(0.7, 1.3, act.live.shape)
    swap_kernel = pod["sc_swapin_ps"] / 4e4
    busy = np.clip((pod["cpu_cores"] + neighbour + 0.3) / cpus, 0.0, 1.0)
    iowait = np.clip(pod["sc_psi_io_some"] * (1 - busy) * rng.uniform(0.05, 0.3), 0.0, 1.0 - busy)
    dev_read = pod["fs_read_bps"] + rng.uniform(0.0, 3e7) * (plan.neighbour_cores[:, None] > 0)
    capability = max(plan.storage.read_bps, plan.storage.device_bps) if plan.storage.block else 3e9
    comm_share = act.comm_total / act.step * act.stepping
    wire = comm_share * plan.net_bps * (plan.pods > 1) * rng.uniform(0.7, 0.95)
    tcp = wire if plan.fabric.kind == "tcp" else 0.0 * wire
    ib = wire if plan.fabric.kind == "ib" else 0.0 * wire
    chatter = rng.uniform(1e5, 5e6) + rng.uniform(0.0, 4e7) * (plan.neighbour_cores[:, None] > 0)
    used = (pod["mem_working_set_bytes"] + mem * rng.uniform(0.05, 0.3)) / mem
    swap_used = np.clip(pod["sc_swapin_ps"] > 0, 0.0, 1.0) * rng.uniform(0.3, 0.9) + rng.uniform(0.0, 0.05)
    return {
        "node_cpus": cpus * ones,
        "node_cpu_busy_frac": busy,
        "node_cpu_iowait_frac": iowait,
        "node_cpu_system_frac": np.clip(busy * rng.uniform(0.04, 0.12) + swap_kernel, 0.0, busy),
        "node_disk_read_bps": dev_read,
        "node_disk_reads_ps": dev_read / plan.storage.request_bytes,
        "node_disk_busy_frac": np.clip(dev_read / capability * rng.uniform(0.9, 1.4), 0.0, 1.0),
        "node_mem_avail_frac": np.clip(1.0 - used, 0.005, 1.0),
        "node_swap_used_frac": np.where(np.array([n.swap_bytes > 0 for n in plan.nodes])[:, None], swap_used, 0.0),
        "node_majfault_ps": pod["sc_majfault_ps"] + rng.uniform(0.0, 20.0),
        "node_net_rx_bps": pod["net_read_bps"] + tcp + chatter,
        "node_net_tx_bps": tcp + chatter * 0.6,
        "ib_rx_bps": ib + 1e4,
        "ib_tx_bps": ib + 1e4,
        "node_psi_cpu_some": np.clip(pod["sc_psi_cpu_some"] + busy**4 * 0.5, 0.0, 1.0),
        "node_psi_io_some": np.clip(pod["sc_psi_io_some"] + rng.uniform(0.0, 0.05), 0.0, 1.0),
        "node_psi_io_full": pod["sc_psi_io_full"],
        "node_psi_mem_some": pod["sc_psi_mem_some"],
        "node_psi_mem_full": pod["sc_psi_mem_full"],
    }
