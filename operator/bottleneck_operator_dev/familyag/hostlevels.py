"""Host-side levels of a pod in steady state: CPU, pressure, I/O, faults, network, and its node's totals.

The loader's time shares come from the event simulation; pressure follows the kernel's definitions
(Documentation/accounting/psi.rst): "some" is the share of time at least one task of the group
stalls on the resource, "full" the share in which all its non-idle tasks stall at once. With the
workers' states taken as independent, ``some = 1 - prod(1 - p_i)`` and ``full`` is the share in
which nobody runs while someone stalls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyag.host import FAULT_S, HostCosts
from bottleneck_operator_dev.familyag.links import CommCosts
from bottleneck_operator_dev.familyag.profile import HOST_CHANNELS, FloatArray
from bottleneck_operator_dev.familyag.scenario import Scenario
from bottleneck_operator_dev.familyag.timeline import Shares

TCP_SYS_CORES_PER_GBPS = 0.4  # kernel CPU per GB/s of TCP traffic (assumed)
NFS_SYS_CORES_PER_GBPS = 0.2  # kernel CPU per GB/s of NFS/Lustre client reads (assumed)
FAULT_SYS_S = 5e-6  # kernel CPU per major fault (assumed)


@dataclass(frozen=True)
class Steady:
    """What one pod's rank did per second in steady state (from the recorded steps).

    Attributes:
        step_s: mean step time.
        read, decode, fault: a worker's share of time reading, decoding, stalled on faults.
        main: the main thread's share of time busy (host work, copies, issuing kernels).
        fabric_bps: the node's fabric traffic per direction, B/s.
    """

    step_s: float
    read: float
    decode: float
    fault: float
    main: float
    fabric_bps: float


def steady(sh: Shares, span: float, steps: int, workers: int, comm: CommCosts, fabric_bytes: float) -> Steady:
    """The steady state of a recorded run (``fabric_bytes``: the node's fabric bytes over ``span``)."""
    per_worker = max(workers * span, 1e-12)
    return Steady(
        step_s=span / max(steps, 1),
        read=min(1.0, sh.read / per_worker),
        decode=min(1.0, sh.decode / per_worker),
        fault=min(1.0, sh.fault / per_worker),
        main=min(1.0, sh.main / max(span, 1e-12)),
        fabric_bps=fabric_bytes / max(span, 1e-12) if comm.kind != "none" else 0.0,
    )


def _some(p: float, n: float) -> float:
    return float(1.0 - (1.0 - min(max(p, 0.0), 1.0)) ** max(n, 0.0))


def _cpu(sc: Scenario, hc: HostCosts, st: Steady, spin: bool) -> dict[str, float]:
    """CPU use, throttling, CPU pressure and process states of the pod."""
    ranks, n = sc.gpus_per_pod, sc.gpus_per_pod * sc.workers
    per_step = hc.decode_cpu + hc.host_cpu + st.main * st.step_s * hc.main_speed + hc.h2d_bytes / 8e9
    main_cpu = max(0.92, st.main * hc.main_speed) if spin else st.main * hc.main_speed
    cores = ranks * (per_step / st.step_s + (main_cpu - st.main * hc.main_speed))
    wanted = ranks * (1.0 if spin else st.main) + n * st.decode
    supply = hc.avail_cores
    throttled = 0.0
    if sc.cpu_limit is not None:
        use = min(1.0, cores / sc.cpu_limit)
        throttled = min(0.99, use**6 + (0.6 if wanted > sc.cpu_limit * 1.05 else 0.0))  # share of CFS periods
    busy_workers = n * st.decode if hc.worker_speed * st.decode >= 0.9 else 0.0
    return {
        "cpu": cores,
        "throttled": 10.0 * throttled,
        "periods": 10.0 if sc.cpu_limit is not None else 0.0,
        "psi_cpu": max(0.0, 1.0 - supply / max(wanted, 1e-9)),
        "running": ranks * (1.0 if spin else st.main) + n * st.decode * hc.worker_speed,
        "busyp": (ranks if main_cpu >= 0.9 else 0.0) + busy_workers,
    }


def _io(sc: Scenario, hc: HostCosts, st: Steady) -> dict[str, float]:
    """Storage reads, I/O pressure, D-state readers and the storage's network traffic."""
    ranks, n = sc.gpus_per_pod, sc.gpus_per_pod * sc.workers
    kind = sc.storage
    rate = ranks * hc.miss_bytes / st.step_s
    stalled = st.read if kind.dstate else 0.0
    full = (1.0 - st.main) * max(0.0, (1.0 - st.decode) ** n - (1.0 - st.decode - stalled) ** n) if stalled else 0.0
    ops = ranks * hc.requests / st.step_s * (1.0 if sc.files else 8.0)
    in_flight = _some(st.read, n) if kind.block and not kind.device_idle else 0.0
    device = rate / 5e9 if kind.device_idle else 0.0
    return {
        "fs_rd": rate if kind.block else 0.0,
        "psi_io": _some(stalled, n),
        "psi_io_full": min(full, _some(stalled, n)),
        "dstate": n * stalled,
        "n_disk_rd": rate if kind.block else 0.0,
        "n_disk_ops": ops if kind.block else 0.0,
        "n_disk_busy": max(in_flight, device),
        "pod_rx": rate if kind.pod_net else 0.0,
        "host_rx": rate if kind.host_net else 0.0,
    }


def _memory(sc: Scenario, hc: HostCosts, st: Steady) -> dict[str, float]:
    """Major faults, swap-ins and memory pressure from swapping."""
    ranks, n = sc.gpus_per_pod, sc.gpus_per_pod * sc.workers
    faults = ranks * (hc.faults_main + hc.faults_worker) / st.step_s
    main_stall = min(1.0, hc.faults_main * FAULT_S[sc.swap] / st.step_s)
    some = 1.0 - (1.0 - _some(st.fault, n)) * (1.0 - _some(main_stall, ranks))
    idle = max(0.0, 1.0 - st.decode - st.read - st.fault)
    return {
        "majflt": faults,
        "swapin": faults * (8.0 if sc.swap == "disk" else 1.0),
        "psi_mem": some,
        "psi_mem_full": min(some, main_stall * (idle + st.fault) ** n + 0.3 * _some(st.fault, n) * (1.0 - st.main)),
    }


def host_levels(sc: Scenario, hc: HostCosts, st: Steady, spin: bool, floors: tuple[float, float]) -> FloatArray:
    """Every host channel (:data:`~.profile.HOST_CHANNELS`) of one pod in steady state.

    Args:
        sc: the Job.
        hc: the pod's host costs.
        st: its steady state.
        spin: the main thread spins while it waits for the GPU.
        floors: background CPU and I/O pressure, added to what the Job causes.
    """
    out = {**_cpu(sc, hc, st, spin), **_io(sc, hc, st), **_memory(sc, hc, st)}
    out["psi_cpu"] = min(0.99, out["psi_cpu"] + floors[0])
    out["psi_io"] = min(0.99, out["psi_io"] + floors[1])
    tcp = st.fabric_bps if sc.fabric is not None and not sc.fabric.rdma else 0.0
    out["pod_rx"] += tcp
    out["pod_tx"] = tcp + 0.01 * out["pod_rx"]
    out["sys"] = (
        (out["pod_rx"] + tcp) / 1e9 * TCP_SYS_CORES_PER_GBPS
        + out["host_rx"] / 1e9 * NFS_SYS_CORES_PER_GBPS
        + out["majflt"] * FAULT_SYS_S
        + 0.05 * out["cpu"]
    )
    out["ib_rx"] = out["ib_tx"] = st.fabric_bps if sc.fabric is not None and sc.fabric.rdma else 0.0
    node_totals(sc, out)
    return np.asarray([out.get(name, 0.0) for name in HOST_CHANNELS], dtype=np.float64)


def node_totals(sc: Scenario, out: dict[str, float]) -> None:
    """Add the node's totals: this pod, its neighbours and the system daemons."""
    nb, cpus = sc.neighbours, float(sc.node_cpus)
    system = 0.3 + 0.01 * cpus
    busy = min(cpus, out["cpu"] + out["sys"] + nb.cpu + system)
    nb_share = nb.cpu / cpus
    out["n_busy"] = busy
    out["n_sys"] = out["sys"] + 0.1 * nb.cpu + 0.3 * system
    out["n_iowait"] = min(cpus - busy, out["dstate"] * 0.9)
    out["n_disk_rd"] += nb.disk_bps + (out["swapin"] * 4096.0 if sc.swap == "disk" else 0.0)
    out["n_disk_ops"] += nb.disk_bps / 256e3 + (out["swapin"] / 8.0 if sc.swap == "disk" else 0.0)
    if nb.disk_bps > 0 or sc.swap == "disk":
        out["n_disk_busy"] = min(1.0, out["n_disk_busy"] + nb.disk_bps / 2e9 + out["swapin"] * 1e-5)
    out["n_majflt"] = out["majflt"] + 2.0 * nb.count
    out["n_rx"] = out["pod_rx"] + out["host_rx"] + nb.net_bps
    out["n_tx"] = out["pod_tx"] + out.get("host_tx", 0.0) + 0.5 * nb.net_bps + 0.01 * out["host_rx"]
    crowd = max(0.0, busy / cpus - 0.7) * 2.0
    out["n_psi_cpu"] = 1.0 - (1.0 - out["psi_cpu"]) * (1.0 - min(0.9, crowd + 0.02 * nb_share))
    out["n_psi_io"] = 1.0 - (1.0 - out["psi_io"]) * (1.0 - min(0.5, nb.disk_bps / 2e9))
    out["n_psi_io_full"] = out["psi_io_full"] * (1.0 - nb_share)
    out["n_psi_mem"] = out["psi_mem"]
    out["n_psi_mem_full"] = out["psi_mem_full"] * (1.0 - nb_share)


@dataclass(frozen=True)
class MemoryState:
    """Memory gauges of a pod and its node.

    Attributes:
        working_set: the pod's working set (anonymous memory resident plus active page cache), bytes.
        avail_frac: the node's MemAvailable / MemTotal.
        swap_frac: the node's swap in use, as a share of its swap (0 without swap).
        fb_frac: the framebuffer share the caching allocator holds on the pod's GPUs.
    """

    working_set: float
    avail_frac: float
    swap_frac: float
    fb_frac: float


def memory_state(sc: Scenario, hc: HostCosts, fb_frac: float) -> MemoryState:
    """The pod's and node's memory while training (the Job's other pods sit on other nodes)."""
    resident = min(hc.anon, hc.usable * 0.985)
    cache = max(0.0, min(hc.usable - resident, sc.model.dataset * hc.cache_hit)) * 0.3
    node_used = resident + sc.neighbours.memory + 0.03 * sc.node_ram
    avail = max(0.005, 1.0 - node_used / sc.node_ram)
    if hc.swapped > 0 and sc.mem_limit is None:
        avail = min(avail, 0.02)
    swap = min(1.0, hc.swapped / sc.swap_bytes) if sc.swap_bytes > 0 else 0.0
    return MemoryState(resident + cache, avail, swap, fb_frac)
