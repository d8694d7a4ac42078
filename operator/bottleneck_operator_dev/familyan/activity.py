"""What each pod's hardware does in a regime, in the exporters' own quantities.

From a pod's stage times and the Job's step time: the share of the step each GPU engine is busy,
bytes per second over each link, cores, faults and stall shares. Exporter semantics are applied
here: GPU_UTIL counts any kernel (a collective spinning while it waits for a slower peer included),
SM activity counts warps waiting on memory, RDMA bypasses netdev but crosses PCIe, NFS and object
store reads are network bytes and not disk bytes, an HTTP reader waits in a socket (no iowait).
"""

from __future__ import annotations

from bottleneck_operator_dev.familyan.physics import Plan
from bottleneck_operator_dev.familyan.stages import StageTimes
from bottleneck_operator_dev.familyan.timeline import Regime

# The per-pod quantities a regime sets (the exporters read them, exporters.py).
GPU_Q = ("util", "gr", "sm", "occ", "tensor", "dram", "fp32", "fp16", "pcie_tx", "pcie_rx", "nvl_tx", "nvl_rx", "busy")
HOST_Q = (
    "cpu", "node_busy", "node_iowait", "node_system", "throttled", "disk_rd", "disk_ops", "disk_busy",
    "ws", "node_used", "swap_frac", "majf_node", "majf_pod", "swapin", "oom", "net_rx", "net_tx", "ib_rx",
    "ib_tx", "psi_cpu", "psi_io", "psi_io_full", "psi_mem", "psi_mem_full", "npsi_cpu", "npsi_io",
    "npsi_io_full", "npsi_mem", "npsi_mem_full", "pod_rd", "procs_run", "procs_io", "procs_busy",
    "pod_net_rx", "pod_net_tx",
)  # fmt: skip
QUANTITIES = GPU_Q + HOST_Q
PAGE = 4096.0


def _gpu(plan: Plan, st: StageTimes, step: float, wait: float) -> dict[str, float]:
    """Per-GPU engine shares and link rates (the pod's mean GPU)."""
    w, c = plan.workload, plan.cluster
    g, n = c.per_node, c.nodes
    multi = c.gpus > 1
    kern = st.flops + st.hbm
    launch_bound = st.launch > kern
    comm = st.sync_intra + st.sync_inter + st.crit_intra + st.crit_inter
    spin = wait if multi else 0.0  # peers spin inside the collective while the slowest pod catches up
    # NVML samples any-kernel-running over 1/6 s to 1 s: microsecond launch gaps do not show
    util = min(1.0, ((0.95 * st.launch) if launch_bound else kern) / step + st.exposed_comm / step + spin / step)
    gr = min(1.0, (kern + st.exposed_comm + spin) / step)
    sm = min(1.0, (st.flops * w.fill + st.hbm * 0.92 + comm * 0.1 + spin * 0.06) / step)
    tensor = st.flops * w.kernel_eff / step if w.tensor else 0.02 * st.flops / step
    dram = min(0.95, (st.hbm * 0.8 + st.flops * 0.22 + comm * 0.08) / step)
    inter_gpu = (st.sync_inter + st.crit_inter) * c.nic_bandwidth() * 0.85 / max(g, 1) if n > 1 else 0.0
    rdma = inter_gpu / step if c.fabric.rdma else 0.0  # GPUDirect RDMA: symmetric PCIe RX and TX
    h2d = st.h2d / max(w.h2d_sync, 1e-6) * c.board.pcie * 0.8 / step
    intra = (st.sync_intra + st.crit_intra) * (c.board.nvlink / 2) * 0.8 / step if c.board.nvlink and g > 1 else 0.0
    if not c.board.nvlink and g > 1:
        rdma += (st.sync_intra + st.crit_intra) * c.board.pcie * 0.4 / step  # peer traffic crosses PCIe
    return {
        "util": util,
        "gr": gr,
        "sm": sm,
        "occ": sm * (0.35 + 0.4 * w.fill) * (0.6 if st.hbm > st.flops else 1.0),
        "tensor": min(tensor, 0.98),
        "dram": dram,
        "fp32": min(1.0, (0.1 * st.hbm + 0.04 * st.flops) / step),
        "fp16": min(1.0, (0.06 * st.hbm) / step),
        "pcie_rx": h2d + rdma + 2e6,
        "pcie_tx": h2d * 0.02 + rdma + 1e6,
        "nvl_tx": intra,
        "nvl_rx": intra,
        "busy": gr,
    }


def _pause(plan: Plan, regime: Regime, step: float) -> dict[str, float]:
    """A checkpoint write or the model load: GPUs idle, storage busy."""
    c, w = plan.cluster, plan.workload
    g = c.per_node
    q = dict.fromkeys(QUANTITIES, 0.0)
    q.update(pcie_rx=1e6, pcie_tx=1e6, cpu=g * 1.1, procs_run=g, ws=min(plan.host_need, plan.mem_limit) * 0.8)
    nbytes = (w.ckpt_bytes if regime.phase == "checkpoint" else w.ckpt_bytes / 2) * g
    rate = min(nbytes / max(step, 1.0), c.storage.bandwidth * c.storage_share)
    writing = regime.phase == "checkpoint"
    if c.storage.network:
        q["net_tx" if writing else "net_rx"] = rate
        q["pod_net_tx" if writing else "pod_net_rx"] = rate
    else:
        q["disk_busy"] = 0.95
        if not writing:
            q.update(disk_rd=rate, disk_ops=rate / 262144, pod_rd=rate)
    if c.storage.dstate:
        q.update(psi_io=0.9, psi_io_full=0.8, npsi_io=0.9, npsi_io_full=0.8, procs_io=g, node_iowait=g / c.node_cpus)
    q.update(pcie_tx=1e6 + (rate / g if writing else 0.0), pcie_rx=1e6 + (0.0 if writing else rate / g))
    return q


def _host(plan: Plan, regime: Regime, st: StageTimes, step: float, node: int) -> dict[str, float]:
    """Cores, storage, memory, network and pressure of one pod and its node."""
    w, c = plan.workload, plan.cluster
    g, s = c.per_node, regime.scale
    hit = plan.hit_ratio(regime, node)
    in_rate = w.input_bytes * s * g / step
    miss_rate = in_rate * (1.0 - hit)
    decode = (w.decode_core_s * s * g + w.serial_core_s * s * g) / step
    tcp = (
        (st.sync_inter + st.crit_inter) * c.nic_bandwidth() * 0.55 / step if c.nodes > 1 and not c.fabric.rdma else 0.0
    )
    rdma = (st.sync_inter + st.crit_inter) * c.nic_bandwidth() * 0.85 / step if c.nodes > 1 and c.fabric.rdma else 0.0
    demand = g * (0.6 + 0.4 * min(1.0, st.kernels / step)) + decode + tcp / 1.5e9
    cpu = min(demand, c.cpu_limit) if c.cpu_limit is not None else demand
    throttled = 0.0
    if c.cpu_limit is not None:
        throttled = 0.9 if demand >= 0.97 * c.cpu_limit else 0.15 * demand / c.cpu_limit
    io_share = min(1.0, st.io / step)
    waiting_input = max(0.0, st.input - st.gpu_side) / step
    readers = w.workers * g * io_share if c.storage.dstate else 0.0
    mem_p = st.host_mem / step
    nb = regime.neighbour and node == 0
    nb_cores = plan.neighbour_cores if nb else 0.0
    busy_cores = cpu + nb_cores + 0.5 + (mem_p * 2.0)
    q = {
        "cpu": cpu,
        "node_busy": min(1.0, busy_cores / c.node_cpus),
        "node_iowait": min(0.5, readers * 0.8 / c.node_cpus),
        "node_system": min(0.5, (0.12 * cpu + tcp / 1.5e9 + mem_p * 2.0) / c.node_cpus),
        "throttled": throttled,
        "ws": min(plan.host_need, plan.mem_limit * 0.99),
        "node_used": min(plan.host_need, plan.mem_limit) + (plan.neighbour_mem if nb else 0.0) + 8e9,
        "swap_frac": min(0.9, mem_p * 1.5) if c.swap > 0 else 0.0,
        "majf_pod": mem_p * 25000.0 + (miss_rate / PAGE * 0.5 if w.mmap else 0.0),
        "swapin": mem_p * 20000.0 if c.swap > 0 else 0.0,
        "oom": 0.002 * mem_p if c.swap == 0 and mem_p > 0.3 else 0.0,
        "psi_cpu": min(1.0, throttled * 0.7 + max(0.0, demand - cpu) / max(cpu, 1.0)),
        "psi_io": io_share if c.storage.dstate else 0.0,
        "psi_io_full": min(io_share, waiting_input) if c.storage.dstate else 0.0,
        "psi_mem": mem_p,
        "psi_mem_full": mem_p * 0.7,
        "procs_run": g + min(w.workers * g, decode),
        "procs_io": readers,
        "procs_busy": float(round(decode)) if st.input >= st.gpu_side * 0.9 else float(round(decode * 0.5)),
        "ib_rx": rdma,
        "ib_tx": rdma,
    }
    q["majf_node"] = q["majf_pod"] + (300.0 if nb else 20.0)
    q["npsi_cpu"] = min(
        1.0, 0.5 * q["psi_cpu"] + max(0.0, busy_cores - c.node_cpus) / c.node_cpus + (0.1 if nb else 0.0)
    )
    for k in ("io", "io_full", "mem", "mem_full"):
        q[f"npsi_{k}"] = min(1.0, q[f"psi_{k}"] + (0.05 if nb else 0.0))
    q.update(_storage_and_net(plan, miss_rate, tcp, nb))
    return q


def _storage_and_net(plan: Plan, miss_rate: float, tcp: float, nb: bool) -> dict[str, float]:
    c, w = plan.cluster, plan.workload
    st = c.storage
    file_size = w.input_bytes / w.files if w.files > 0 else 262144.0
    req = min(max(file_size, 16384.0), 262144.0)
    disk_rd = miss_rate if st.block else 0.0
    remote_rd = miss_rate if st.network else 0.0
    nb_net = plan.neighbour_net if nb else 0.0
    return {
        "disk_rd": disk_rd + (plan.neighbour_io * st.bandwidth * 0.5 if nb and st.block else 0.0),
        "disk_ops": disk_rd / req,
        "disk_busy": min(1.0, 1.3 * disk_rd / st.bandwidth) if st.block else 0.02,
        "pod_rd": disk_rd,
        "net_rx": remote_rd + tcp + nb_net + 2e5,
        "net_tx": tcp + nb_net * 0.3 + 1e5,
        "pod_net_rx": remote_rd + tcp + 1e5,
        "pod_net_tx": tcp + 5e4,
    }


def regime_activity(plan: Plan, regime: Regime, st: StageTimes, step: float, node: int) -> dict[str, float]:
    """Every quantity of :data:`QUANTITIES` for one pod in one regime."""
    if regime.phase in ("startup", "checkpoint"):
        return _pause(plan, regime, step)
    wait = max(0.0, step - st.step)
    q = _gpu(plan, st, step, wait)
    q.update(_host(plan, regime, st, step, node))
    return q
