"""What the host-side exporters show of the step: cAdvisor, kube-state-metrics, the sidecar, node-exporter.

Rates are per second in the units the exporters count (CPU seconds, bytes, faults, pressure
seconds); the scrape turns them into counters. Meanings follow the kernel's cgroup-v2 and PSI
documentation: ``some`` pressure is the share of time at least one task waited on the resource,
``full`` the share in which all non-idle tasks did; CFS counts the enforcement periods (100 ms)
in which the cgroup ran out of quota. Reads from NFS/FUSE/HTTP stores never reach diskstats or
io.stat (block only); HTTP readers wait in socket receive, not in D state, so no iowait shows.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyj.hardware import GIB
from bottleneck_operator_dev.familyj.plan import Plan, Rng
from bottleneck_operator_dev.familyj.stepmodel import Factors, Stages

FloatArray = npt.NDArray[np.float64]
PAGE = 4096.0


def loader_cores(plan: Plan) -> float:
    """Cores the loader workers can use at nominal conditions: workers, the CPU limit or the node share."""
    if plan.workers == 0:
        return 0.0
    main = plan.gpus_per_pod * plan.spin + 0.2  # the training processes' own share, polling the GPU
    room = (plan.cpu_limit - main) if plan.cpu_limit is not None else plan.node_cpus / plan.pods_per_node - main
    return float(max(0.5, min(plan.workers * plan.gpus_per_pod, room)))


def pod_cpu(rng: Rng, plan: Plan, st: Stages, f: Factors, pause: FloatArray) -> dict[str, FloatArray]:
    """CPU of each pod's containers: loader workers, training processes, readers, host optimiser."""
    t, g = st.step, plan.gpus_per_pod
    loader = plan.decode_s * loader_cores(plan) * f.work / t
    main_busy = np.minimum(1.0, plan.main_s * f.work / f.cpu / t)
    main = g * (main_busy + plan.spin * (1.0 - main_busy))
    threads = min(24.0, plan.cpu_limit or plan.node_cpus / plan.pods_per_node)
    hostopt = plan.hostopt_s / plan.accum / f.cpu / t * threads
    read_bps = plan.read_s * plan.store_bps * f.work / t
    readers = read_bps * plan.storage.cpu_per_gb / 1e9
    usage = loader + main + hostopt + readers + rng.uniform(0.05, 0.3)
    usage = usage * (1.0 - pause) + g * 1.0 * pause  # a checkpoint serialises on one core per process
    # CPU the pod wanted but could not get on a contended node: runnable, waiting (cpu pressure)
    contention = np.clip(1.0 - f.cpu, 0.0, 0.9)
    out = {"cpu_cores": usage, "read_bps": read_bps * (1.0 - pause), "loader_cores": loader, "contention": contention}
    if plan.cpu_limit is not None:
        usage = np.minimum(usage, plan.cpu_limit * 0.985)
        load = usage / plan.cpu_limit
        out["cpu_cores"] = usage
        out["throttled"] = np.clip((load - 0.55) / 0.42, 0.0, 1.0) ** 1.3 * rng.uniform(0.85, 0.98)
    return out


def pod_memory(rng: Rng, plan: Plan, st: Stages, f: Factors) -> dict[str, FloatArray]:
    """Working set, swap-ins, major faults, OOM kills and memory stall shares of each pod."""
    t, g = st.step, plan.gpus_per_pod
    loader_stall = plan.loader_mem * f.mem * st.decode / (1.0 + plan.loader_mem * f.mem) / t
    stall = np.minimum(0.97, st.swap / t + loader_stall)
    stalled_threads = st.swap / t * g + loader_stall * max(1, plan.workers) * g
    latency = rng.uniform(10e-6, 30e-6) if rng.random() < 0.4 else rng.uniform(60e-6, 160e-6)  # zram / disk
    faults = stalled_threads / latency
    swapin = faults if plan.swap else np.zeros_like(t)
    read_bps = plan.read_s * plan.store_bps * f.work / t
    mmap = read_bps / (128 * 1024) if plan.mmap_dataset else np.zeros_like(t)
    limit = plan.mem_limit
    pressed = plan.swap_s > 0
    ws = (limit or plan.working_set * 1.2) * rng.uniform(0.975, 0.995) if pressed else plan.working_set
    ws_series = ws * (1.0 + 0.01 * np.sin(np.linspace(0, rng.uniform(2, 9), t.shape[1])))[None, :] * np.ones_like(t)
    oom = np.zeros_like(t)
    if pressed and not plan.swap and rng.random() < 0.4:
        oom = (rng.random(t.shape) < 0.004).astype(np.float64) / 5.0  # a helper process killed now and then
    return {
        "reclaim_cores": stalled_threads * rng.uniform(0.2, 0.5),  # direct reclaim scans pages on the CPU
        "working_set": ws_series,
        "swapin_ps": swapin,
        "majfault_ps": faults + mmap + rng.uniform(0.0, 15.0),
        "oom_ps": oom,
        "mem_some": stall,
        "mem_full": stall * rng.uniform(0.3, 0.7),
    }


def pod_pressure(
    rng: Rng, plan: Plan, st: Stages, cpu: dict[str, FloatArray], mem: dict[str, FloatArray]
) -> dict[str, FloatArray]:
    """The pod cgroup's CPU and IO pressure, and its processes by state."""
    t, g = st.step, plan.gpus_per_pod
    read_share = np.minimum(1.0, st.read / t)
    gpu_waits = np.maximum(0.0, st.loader - st.gpu_side) / t
    dstate = plan.storage.dstate
    io_some = np.minimum(0.98, read_share * rng.uniform(0.8, 1.05)) if dstate else read_share * 0.02
    io_some = np.minimum(0.99, io_some + 0.5 * mem["mem_some"] * plan.swap)
    contention = 0.25 * plan.neighbour_cpu / plan.node_cpus if plan.cpu_limit is None else 0.0
    cpu_some = 0.75 * cpu.get("throttled", np.zeros_like(t)) + contention + 0.9 * cpu["contention"] + 0.01
    workers = max(1, plan.workers) * g
    per_worker = cpu["loader_cores"] / workers
    main_busy = np.minimum(1.0, plan.main_s / t)
    busy_procs = np.where((main_busy > 0.9) | (plan.spin > 0.9), g, 0) + np.where(per_worker > 0.9, workers, 0)
    return {
        "cpu_some": np.minimum(0.99, cpu_some),
        "io_some": io_some,
        "io_full": io_some * gpu_waits * 0.8,
        "procs_running": g * (main_busy + plan.spin * (1 - main_busy)) + cpu["loader_cores"],
        "procs_iowait": (workers * read_share if dstate else np.zeros_like(t)) + mem["mem_some"] * workers * 0.3,
        "procs_busy": np.asarray(busy_procs, dtype=np.float64),
    }


def by_node(plan: Plan, pods: FloatArray) -> FloatArray:
    """Per-pod rows summed per node (pods fill nodes in order)."""
    pad = plan.nodes * plan.pods_per_node - plan.pods
    rows = np.concatenate([pods, np.zeros((pad, pods.shape[1]))]) if pad else pods
    return np.asarray(rows.reshape(plan.nodes, plan.pods_per_node, -1).sum(axis=1))


def node_io(
    rng: Rng, plan: Plan, pod: dict[str, FloatArray], nic: FloatArray, pause: FloatArray
) -> dict[str, FloatArray]:
    """Disk, netdev and InfiniBand bytes of each node."""
    read = by_node(plan, pod["read_bps"])
    zeros = np.zeros_like(read)
    swap_bytes = by_node(plan, pod["swapin_ps"]) * PAGE
    block = (read if plan.storage.block else zeros) + plan.neighbour_disk + swap_bytes
    cap = plan.store_bps * plan.pods_per_node if plan.storage.block else 3e9
    nic_node = by_node(plan, nic)
    tcp = nic_node if not plan.fabric.rdma or plan.fabric.netdev_sees_rdma else zeros
    store_net = read if plan.storage.via == "netdev" else zeros
    background = rng.uniform(2e5, 5e6)
    upload = pause * rng.uniform(3e8, 3e9) * (plan.pods_per_node if rng.random() < 0.5 else 1)
    rdma = nic_node if plan.fabric.rdma else zeros
    return {
        "disk_read_bps": block,
        "disk_reads_ps": block / plan.storage.request_bytes,
        "disk_busy": 1.0 - np.exp(-4.0 * block / cap),
        "net_rx_bps": store_net + tcp + plan.neighbour_net + background,
        "net_tx_bps": tcp + plan.neighbour_net * 0.3 + background + upload,
        "ib_rx_bps": rdma + (read if plan.storage.via == "ib" else zeros) + plan.neighbour_rdma,
        "ib_tx_bps": rdma + plan.neighbour_rdma * 0.9,
    }


def node_cpu_memory(
    rng: Rng, plan: Plan, pod: dict[str, FloatArray], io: dict[str, FloatArray]
) -> dict[str, FloatArray]:
    """CPU seconds by mode, memory, swap, faults and pressure of each node."""
    n = float(plan.node_cpus)
    others = by_node(plan, pod["contention"]) / plan.pods_per_node * n * 0.9  # whoever takes the CPU it lacks
    busy = by_node(plan, pod["cpu_cores"]) + np.maximum(plan.neighbour_cpu, others) + rng.uniform(0.3, 1.5)
    busy = np.minimum(n * 0.99, busy)
    kernel = (io["net_rx_bps"] + io["net_tx_bps"]) / 1e9 * 0.3 + by_node(plan, pod["reclaim_cores"])
    if plan.swap_s > 0 and plan.mem_limit is None:
        kernel = kernel + rng.uniform(0.5, 2.0)  # kswapd threads when the whole node is short
    system = np.minimum(busy, 0.07 * busy + kernel)
    iowait = np.minimum(n - busy, by_node(plan, pod["procs_iowait"]) * 0.7)
    used = by_node(plan, pod["working_set"]) + plan.node_mem_bytes * rng.uniform(0.03, 0.3) * (plan.neighbours > 0)
    avail = np.clip(plan.node_mem_bytes * 0.97 - used, plan.node_mem_bytes * 0.004, None)
    if plan.swap_s > 0 and plan.mem_limit is None:
        avail = plan.node_mem_bytes * rng.uniform(0.004, 0.03) * np.ones_like(busy)
    swap_total = float(rng.choice([8, 16, 32, 64])) * GIB if plan.swap else 0.0
    swap_used = rng.uniform(0.3, 0.95) if plan.swap and plan.swap_s > 0 else rng.uniform(0.0, 0.05)
    mem_some = by_node(plan, pod["mem_some"]) / plan.pods_per_node
    return {
        "user_cores": busy - system,
        "system_cores": system,
        "iowait_cores": iowait,
        "idle_cores": np.maximum(0.0, n - busy - iowait),
        "mem_avail": avail,
        "swap_free": np.full_like(busy, swap_total * (1.0 - swap_used)),
        "swap_total": np.full_like(busy, swap_total),
        "majfault_ps": by_node(plan, pod["majfault_ps"]) + rng.uniform(0.0, 40.0),
        "psi_cpu_some": np.clip((busy / n - 0.6) / 0.35, 0.0, 1.0) ** 2 * 0.8 + 0.005,
        "psi_io_some": np.minimum(0.99, iowait / n * 4.0 + io["disk_busy"] * 0.05),
        "psi_io_full": np.minimum(0.99, iowait / n * 1.5),
        "psi_mem_some": mem_some * 0.85,
        "psi_mem_full": mem_some * 0.35,
    }
