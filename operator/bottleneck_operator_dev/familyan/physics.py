"""From a workload on a cluster, in one regime, to each pod's stage times (stages.StageTimes).

Every time is bytes over a bandwidth or work over a rate: FLOPs over the board's peak times the
kernels' efficiency and the clock, bytes over HBM at its practical peak (DRAM activity ~0.8,
TELEMETRY.md), over PCIe, NVLink or the NIC, decode core-seconds over the cores the loader gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyan.cluster import Cluster
from bottleneck_operator_dev.familyan.stages import StageTimes
from bottleneck_operator_dev.familyan.timeline import Regime
from bottleneck_operator_dev.familyan.workloads import Workload, peak_flops

HBM_PRACTICAL = 0.8  # DRAM activity ~0.8 is the practical maximum (TELEMETRY.md, DCGM profiling docs)
COPY_EFF = 0.8  # pinned host-to-device copies reach about 80 % of the link (assumption, docs/familyan.md)
RDMA_EFF, TCP_EFF = 0.85, 0.55  # NCCL bus efficiency over RDMA and over sockets (assumption)
LINK_EFF = 0.8  # NCCL over NVLink or PCIe peer paths (assumption)


@dataclass(frozen=True)
class Plan:
    """One Job's draw: what it runs, where, and what shares its nodes.

    Attributes:
        workload: per-step demands.
        cluster: the machines.
        mem_limit: the pod's memory limit, bytes.
        page_cache: page cache a node can give the dataset, bytes.
        neighbour_cores: cores a neighbour uses on node 0 once it arrives.
        neighbour_io: share of the storage's bandwidth the neighbour takes.
        neighbour_net: bytes/s the neighbour moves over node 0's NIC (each way).
        neighbour_mem: bytes of node 0's memory the neighbour takes.
    """

    workload: Workload
    cluster: Cluster
    mem_limit: float
    page_cache: float
    neighbour_cores: float
    neighbour_io: float
    neighbour_net: float
    neighbour_mem: float

    @property
    def host_need(self) -> float:
        return self.workload.host_mem * self.cluster.per_node

    def hit_ratio(self, regime: Regime, node: int) -> float:
        """Share of input reads served from page cache: none in the first epoch or from an HTTP store."""
        if regime.phase in ("warmup", "startup") or (
            not self.cluster.storage.block and not self.cluster.storage.dstate
        ):
            return 0.0
        per_node = self.workload.dataset_bytes / max(self.cluster.nodes, 1)
        cache = self.page_cache - (self.neighbour_mem if regime.neighbour and node == 0 else 0.0)
        return min(1.0, max(cache, 0.0) / per_node) if per_node > 0 else 1.0


def _cores(plan: Plan, regime: Regime, node: int, workers: float) -> tuple[float, str]:
    """Cores the loader (or environments) can use, and what caps them."""
    c, g = plan.cluster, plan.cluster.per_node
    main = g * 1.0  # one trainer process per GPU keeps a core busy issuing work
    node_free = c.node_cpus - main - (plan.neighbour_cores if regime.neighbour and node == 0 else 0.0)
    options = {"too-few-workers": workers, "saturated": max(node_free, 0.5)}
    if c.cpu_limit is not None:
        options["throttled"] = max(c.cpu_limit - main, 0.25)
    cap = min(options, key=lambda k: options[k])
    return options[cap], cap


def _comm(plan: Plan, regime: Regime, node: int) -> tuple[float, float, float, float, bool]:
    """Seconds of gradient sync and critical-path collectives, inside the node and between nodes."""
    w, c, s = plan.workload, plan.cluster, regime.scale
    g, n = c.per_node, c.nodes
    nvlink = c.board.nvlink > 0
    intra_bw = (c.board.nvlink / 2 if nvlink else c.board.pcie / 2) * LINK_EFF
    tp = w.tp_bytes * s
    sync_intra = w.sync_factor * w.sync_bytes * (g - 1) / g / intra_bw if g > 1 else 0.0
    crit_intra = (tp + w.alltoall_bytes * s * (g - 1) / (g * n)) / intra_bw if g > 1 else 0.0
    if n == 1:
        return sync_intra, 0.0, crit_intra, 0.0, nvlink
    nic = c.nic_bandwidth() * (RDMA_EFF if c.fabric.rdma else TCP_EFF)
    if regime.neighbour and node == 0 and not c.fabric.rdma:
        nic = max(nic - plan.neighbour_net, nic * 0.3)
    full = w.sync_bytes * (c.per_node if w.tp_bytes > 0 else 1)  # each node moves the whole model's sync
    sync_inter = w.sync_factor * full * (n - 1) / n / nic
    crit_inter = w.alltoall_bytes * s * g * (n - 1) / n / nic
    return sync_intra, sync_inter, crit_intra, crit_inter, nvlink


def _io(plan: Plan, regime: Regime, node: int) -> float:
    """Seconds to read one step's input that the cache does not serve."""
    w, c = plan.workload, plan.cluster
    g, st = c.per_node, c.storage
    miss = 1.0 - plan.hit_ratio(regime, node)
    share = c.storage_share * (1.0 - (plan.neighbour_io if regime.neighbour and node == 0 else 0.0))
    inflight = max(w.workers * g * 2, 1)
    return w.input_bytes * regime.scale * g * miss / (st.bandwidth * share) + w.files * g * miss * st.latency / inflight


def stage_times(plan: Plan, regime: Regime, node: int, clock: float, host_stall: float = 0.0) -> StageTimes:
    """One pod's stage times in a regime, at a clock factor (1 = full boost)."""
    w, c = plan.workload, plan.cluster
    board, g, s = c.board, c.per_node, regime.scale
    remote = c.storage.network
    if regime.phase in ("startup", "checkpoint"):
        return StageTimes(pause=1.0, remote=remote)
    ev = w.eval_cost if regime.phase == "eval" else 1.0
    workers, cap = _cores(plan, regime, node, w.workers * g)
    flops = w.flops * s * ev / (peak_flops(board, w.tensor) * w.kernel_eff * clock) / (1.0 - w.bubble)
    sync_intra, sync_inter, crit_intra, crit_inter, nvlink = _comm(plan, regime, node)
    serial_workers = min(workers, max(w.workers * g, 1))
    return StageTimes(
        io=_io(plan, regime, node),
        cpu=w.decode_core_s * s * g * (0.7 if ev < 1 else 1.0) / workers,
        cpu_serial=w.serial_core_s * s * g / serial_workers,
        h2d=w.h2d_bytes * s / (board.pcie * COPY_EFF) * w.h2d_sync,
        flops=flops,
        launch=w.launches * w.launch_s * (0.5 if ev < 1 else 1.0),
        hbm=w.hbm_bytes * s * ev / (board.hbm * HBM_PRACTICAL),
        sync_intra=0.0 if ev < 1 else sync_intra,
        sync_inter=0.0 if ev < 1 else sync_inter,
        crit_intra=crit_intra * ev,
        crit_inter=crit_inter * ev,
        overlap=w.overlap * 2 / 3,
        host_mem=host_stall,
        intra_nvlink=nvlink,
        cpu_bound_by=cap,
        remote=remote,
    )


def memory_stall_share(plan: Plan) -> float:
    """Share of time the pod stalls on host memory: grows with how far its need exceeds its limit."""
    deficit = plan.host_need - plan.mem_limit
    return 0.0 if deficit <= 0 else min(0.75, 3.0 * deficit / plan.mem_limit + 0.05)


def power_clock(plan: Plan, busy: float) -> float:
    """Clock factor a board settles at under its enforced power limit, given its kernel-busy share.

    Dynamic power grows faster than the clock (voltage rises with it), so the clock falls roughly
    with the square root of the power that must be shed (assumption, docs/familyan.md).
    """
    b = plan.cluster.board
    demand = b.idle + (b.tdp - b.idle) * min(busy, 1.0) * 0.95
    limit = plan.cluster.power_limit
    if demand <= limit:
        return 1.0
    return float(((limit - b.idle) / (demand - b.idle)) ** 0.5)
