"""The derived series' names, in the feature schema's order, and the stall shares read with a dead band.

What each series means is written beside its name; :mod:`.derived` computes them from the signals.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NewType

# A column name of the feature row: built from the members below, never written as a string, so a
# misspelt feature is a type error rather than a KeyError at run time.
FeatureKey = NewType("FeatureKey", str)


class Stat(StrEnum):
    """How a series enters the row: its mean, quantiles and coefficient of variation over the window."""

    MEAN = "mean"
    P10 = "p10"
    P50 = "p50"
    P90 = "p90"
    CV = "cv"


class Extra(StrEnum):
    """Features of the whole Job rather than of one series."""

    ACT_LOW_SHARE = "act_low_share"  # share of samples with GPU activity < 0.3
    ACT_POD_SPREAD = "act_pod_spread"  # max - min of the pods' mean activity
    CLOCK_PEER_MIN = "clock_peer_min"  # the slowest pod's mean clock over the fastest's: a straggler among its peers
    N_PODS = "n_pods"
    N_NODES = "n_nodes"
    GPUS_PER_POD = "gpus_per_pod"
    LOG_GPUS = "log_gpus"
    CO_LOCATED_PODS = "co_located_pods"
    HAS_NVLINK = "has_nvlink"

    @property
    def key(self) -> FeatureKey:
        return FeatureKey(self.value)


# Shares of time that every busy machine shows a little of (a throttled period now and then, pressure
# from a short burst): below WAITED_ON they carry the exporters' and the node's background, which
# differs from one cluster to the next, not a stall of the job.
BANDED: tuple[str, ...] = (
    "cpu_throttled_frac",
    "sc_throttled_frac",
    "sc_psi_cpu_some",
    "sc_psi_io_some",
    "sc_psi_io_full",
    "sc_psi_mem_some",
    "sc_psi_mem_full",
    "node_psi_io_some",
    "node_psi_io_full",
    "node_psi_mem_some",
    "node_psi_mem_full",
)


# --- derived per-pod series (name -> meaning). Order is the feature schema: append only.
class Series(StrEnum):
    """A derived per-pod series; its members' order is the feature schema's (append only)."""

    # time the GPU was busy: gr_engine_active > sm_active > gpu_util. SM_ACTIVE also measures spatial
    # fill (a kernel on a fifth of the SMs reads 0.2), and GPU_UTIL reads 100 % for one kernel on one SM.
    ACT = "act"
    GPU_UTIL = "gpu_util"
    GR_ENGINE_ACTIVE = "gr_engine_active"
    SM_ACTIVE = "sm_active"
    SM_OCCUPANCY = "sm_occupancy"
    TENSOR_ACTIVE = "tensor_active"
    DRAM_ACTIVE = "dram_active"
    MEM_COPY_UTIL = "mem_copy_util"
    # GPU_UTIL less copy time, minus (sm_active or gr_engine_active): kernels running but SMs idle
    # (NCCL, tiny kernels)
    UTIL_GAP = "util_gap"
    TENSOR_PER_ACT = "tensor_per_act"  # tensor pipe share while the GPU is active
    DRAM_MINUS_TENSOR = "dram_minus_tensor"  # bandwidth-bound kernels: DRAM busy, tensor pipes not
    PCIE_RX_FRAC = "pcie_rx_frac"  # host -> device vs link capacity
    PCIE_TX_FRAC = "pcie_tx_frac"
    NVLINK_FRAC = "nvlink_frac"  # NVLink bytes vs the GPU's NVLink capacity
    CPU_PER_GPU = "cpu_per_gpu"  # cores used per GPU
    CPU_LIMIT_FRAC = "cpu_limit_frac"  # cores used / CPU limit
    CPU_NODE_FRAC = "cpu_node_frac"  # cores used / node CPUs
    JOB_SHARE_NODE_CPU = (
        "job_share_node_cpu"  # this pod's share of the node's busy CPU (low: neighbours make the noise)
    )
    CPU_THROTTLED_FRAC = "cpu_throttled_frac"
    MEM_LIMIT_FRAC = "mem_limit_frac"
    NODE_CPU_BUSY_FRAC = "node_cpu_busy_frac"
    NODE_CPU_IOWAIT_FRAC = "node_cpu_iowait_frac"
    NODE_CPU_SYSTEM_FRAC = "node_cpu_system_frac"
    NODE_DISK_BUSY_FRAC = "node_disk_busy_frac"
    NODE_MEM_USED_FRAC = "node_mem_used_frac"
    NODE_SWAP_USED_FRAC = "node_swap_used_frac"
    LOG_MAJFAULT = "log_majfault"
    NODE_PSI_CPU_SOME = "node_psi_cpu_some"
    NODE_PSI_IO_SOME = "node_psi_io_some"
    NODE_PSI_IO_FULL = "node_psi_io_full"
    NODE_PSI_MEM_SOME = "node_psi_mem_some"
    NODE_PSI_MEM_FULL = "node_psi_mem_full"
    NET_RX_SHARE = "net_rx_share"  # network receive / (network receive + block reads): remote storage reads
    NET_SYMMETRY = "net_symmetry"  # min(rx, tx) / max(rx, tx): ~1 all-reduce, ~0 storage reads, NaN for none
    LOG_NET_PER_GPU = "log_net_per_gpu"
    LOG_READ_PER_GPU = "log_read_per_gpu"
    READ_REL_PEAK = "read_rel_peak"  # reads / the window's own peak: a flat plateau near 1 suggests a saturated source
    NET_REL_PEAK = "net_rel_peak"
    SC_PSI_CPU_SOME = "sc_psi_cpu_some"
    SC_PSI_IO_SOME = "sc_psi_io_some"
    SC_PSI_IO_FULL = "sc_psi_io_full"
    SC_PSI_MEM_SOME = "sc_psi_mem_some"
    SC_PSI_MEM_FULL = "sc_psi_mem_full"
    SC_CPU_LIMIT_FRAC = "sc_cpu_limit_frac"
    SC_THROTTLED_FRAC = "sc_throttled_frac"
    SC_LOG_MAJFAULT = "sc_log_majfault"
    SC_IOWAIT_PROCS_SHARE = "sc_iowait_procs_share"
    PCIE_REL_PEAK = (
        "pcie_rel_peak"  # host-to-device bytes / the window's own peak: a saturated link runs flat at its ceiling
    )
    PCIE_PER_ACT = "pcie_per_act"  # host-to-device link share per unit of GPU activity: bytes the GPUs wait for
    POWER_REL_PEAK = "power_rel_peak"  # power / the window's own peak: dips mark stalls even without PROF fields
    # iowait over the node's CPU time not spent busy: waiting on storage while cores are free to run
    # (remote storage through FUSE/NFS sits in iowait while the CPU is not saturated; a CPU-bound node
    # has no idle time left to wait in)
    IOWAIT_OF_IDLE = "iowait_of_idle"
    # GPU_UTIL minus the graphics engine's busy time: small kernels with launch gaps in between read as
    # busy on GPU_UTIL's short sample period, not on GR_ENGINE_ACTIVE (NCCL kernels read busy on both)
    UTIL_GR_GAP = "util_gr_gap"
    SM_FILL = "sm_fill"  # sm_active / gr_engine_active: how much of the GPU its kernels fill while it is busy
    # min(rx, tx) / max(rx, tx) on PCIe: GPUDirect RDMA collectives cross it equally both ways, while
    # input batches only go host to device (RDMA bypasses node_network_*, so net_symmetry misses them)
    PCIE_SYMMETRY = "pcie_symmetry"
    # --- features that read the same in any scenario family (docs/scenarios.md, "Where the gap is")
    # GPU saturated by whichever pipe limits its kernels: tensor cores, HBM (DRAM_ACTIVE tops out near
    # 0.8 in practice) or SM issue; compute-, bandwidth- and small-kernel-bound models all read high
    GPU_ANY_PIPE = "gpu_any_pipe"
    # time in kernels that use neither the tensor pipes nor HBM, with no collective bytes moving:
    # launch/host-overhead-bound (NCCL kernels read the same, but with bytes on a link)
    LAUNCH_GAP = "launch_gap"
    # the busiest GPU link against its datasheet ceiling: NVLink, PCIe both ways, and one-way PCIe copies
    # times the share of time the GPU idles
    LINK_BUSY = "link_busy"
    # bytes that cross PCIe equally both ways, against the link: GPUDirect RDMA collectives
    PCIE_FABRIC_FRAC = "pcie_fabric_frac"
    # the job's cores against the cores it may use: min(limit, node cores not used by neighbours)
    CPU_OWN_SAT = "cpu_own_sat"
    # the pod's runnable processes per core it may use (the sidecar sees its own cgroup only)
    SC_RUNNABLE_PER_CORE = "sc_runnable_per_core"
    # the job's cores per runnable process: ~1 when each process (loader worker) keeps a core busy
    CPU_PER_RUNNING = "cpu_per_running"
    # the pod's processes pinned at a full core, per core the pod uses: ~1 when its loader is a few
    # workers, each limited by its own serial speed (too few workers; num_workers=0 pins the trainer);
    # ~0 for readers that sleep on remote storage, or workers that share cores or a quota
    BUSY_CORE_SHARE = "busy_core_share"
    # input bytes (network receive plus block reads) against the window's own peak
    INPUT_REL_PEAK = "input_rel_peak"
    # power against its peak per unit of GPU activity: ~1 when power follows activity
    POWER_PER_ACT = "power_per_act"
    # major faults together with kernel CPU time: reclaim and swap-in (memory-mapped reads fault without
    # the system time of reclaim)
    FAULT_SYS = "fault_sys"
    # stall shares with their background removed (see WAITED_ON); the raw shares stay for the evidence
    CPU_THROTTLED_FRAC_BAND = "cpu_throttled_frac_band"
    SC_THROTTLED_FRAC_BAND = "sc_throttled_frac_band"
    SC_PSI_CPU_SOME_BAND = "sc_psi_cpu_some_band"
    SC_PSI_IO_SOME_BAND = "sc_psi_io_some_band"
    SC_PSI_IO_FULL_BAND = "sc_psi_io_full_band"
    SC_PSI_MEM_SOME_BAND = "sc_psi_mem_some_band"
    SC_PSI_MEM_FULL_BAND = "sc_psi_mem_full_band"
    NODE_PSI_IO_SOME_BAND = "node_psi_io_some_band"
    NODE_PSI_IO_FULL_BAND = "node_psi_io_full_band"
    NODE_PSI_MEM_SOME_BAND = "node_psi_mem_some_band"
    NODE_PSI_MEM_FULL_BAND = "node_psi_mem_full_band"
    # the job's IO pressure (its own cgroup, else the node's) while its GPU is idle: storage stalls that
    # cost GPU time, whatever level of pressure a busy GPU's readers show beside it
    IO_STALL_IDLE = "io_stall_idle"
    # the job's own CPU pressure or throttling while its GPU is idle (pressure as in cpu_psi_own)
    CPU_STALL_IDLE = "cpu_stall_idle"
    # the job's own CPU pressure where it can be the job's limit: throttling counts in full, pressure
    # only as far as the job's cgroup uses the cores it may use (cpu_own_sat) or its processes keep a
    # core each busy (cpu_per_running), in full only at all of them. A cgroup far below both and never throttled waits for cores
    # that other processes hold: a busy node, not a loader that needs more CPU
    CPU_PSI_OWN = "cpu_psi_own"
    # the job's memory pressure (its cgroup, else the node's) while its GPU is idle
    MEM_STALL_IDLE = "mem_stall_idle"
    # each stall's share of the job's stalls while its GPU idles (plus a floor, XProf's 5 %: WAITED_ON):
    # which wait explains the idle GPU, whatever level of pressure a cluster's exporters read
    IO_STALL_SHARE = "io_stall_share"
    CPU_STALL_SHARE = "cpu_stall_share"
    MEM_STALL_SHARE = "mem_stall_share"
    # kernels running on GPU_UTIL's clock with the SMs mostly idle while collective bytes move (NVLink or
    # PCIe both ways, at 5 % of the link or more): NCCL kernels waiting on their links, the counterpart
    # of launch_gap
    COLLECTIVE_GAP = "collective_gap"
    # the HBM's bandwidth in use: DRAM_ACTIVE against its practical ceiling. MEM_COPY_UTIL is no
    # stand-in: it counts time with any read or write in flight and reads high under compute kernels too
    HBM_BUSY = "hbm_busy"
    # power against the enforced limit (DCGM_FI_DEV_POWER_MGMT_LIMIT where exported, else the board's
    # TDP): math-bound kernels draw it to the limit, waiting GPUs stay near their floor
    POWER_LIMIT_FRAC = "power_limit_frac"
    # the SM clock against the pod's own highest clock in the window, while the GPU works: power
    # management moves it sample to sample, so only its own range means something; boards are compared
    # with the Job's peers (``clock_peer_min``), never with a datasheet's maximum
    CLOCK_REL_PEAK = "clock_rel_peak"
    # the SM clock in MHz while the GPU works: context, read across the Job's pods only
    SM_CLOCK_MHZ = "sm_clock_mhz"
    # the share of the pod's GPUs reporting a power-cap, thermal or hardware slowdown (clock-event reasons)
    CLOCK_SLOWDOWN = "clock_slowdown"
    # FP32 and FP16 pipe activity: math the tensor pipes do not carry
    FP32_ACTIVE = "fp32_active"
    FP16_ACTIVE = "fp16_active"
    # InfiniBand/RoCE bytes both ways per GPU (log10): RDMA traffic that netdev counters never see
    LOG_IB_PER_GPU = "log_ib_per_gpu"
    # the pod's pages back from swap and its OOM kills (its own cgroup): host memory pressure
    SC_LOG_SWAPIN = "sc_log_swapin"
    SC_OOM_KILLS = "sc_oom_kills"

    def of(self, stat: Stat) -> FeatureKey:
        """The feature that summarises this series by ``stat``."""
        return FeatureKey(f"{self.value}.{stat.value}")

    @property
    def mean(self) -> FeatureKey:
        return self.of(Stat.MEAN)

    @property
    def p50(self) -> FeatureKey:
        return self.of(Stat.P50)

    @property
    def p90(self) -> FeatureKey:
        return self.of(Stat.P90)

    @property
    def podmax(self) -> FeatureKey:
        """The largest of the pods' means (series in ``POD_SPREAD`` only)."""
        return FeatureKey(f"{self.value}.mean.podmax")

    @property
    def podmin(self) -> FeatureKey:
        """The smallest of the pods' means (series in ``POD_SPREAD`` only)."""
        return FeatureKey(f"{self.value}.mean.podmin")


SERIES: tuple[str, ...] = tuple(s.value for s in Series)
SERIES_INDEX: dict[str, int] = {name: i for i, name in enumerate(SERIES)}
