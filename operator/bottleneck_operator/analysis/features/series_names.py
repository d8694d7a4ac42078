"""The derived series' names, in the feature schema's order, and the stall shares read with a dead band.

What each series means is written beside its name; :mod:`.derived` computes them from the signals.
"""

from __future__ import annotations

# Shares of time that every busy machine shows a little of (a throttled period now and then, pressure
# from a short burst): below DEAD_BAND they carry the exporters' and the node's background, which
# differs from one cluster to the next, not a stall of the job.
DEAD_BAND = 0.05
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
SERIES: tuple[str, ...] = (
    # time the GPU was busy: gr_engine_active > sm_active > gpu_util. SM_ACTIVE also measures spatial
    # fill (a kernel on a fifth of the SMs reads 0.2), and GPU_UTIL reads 100 % for one kernel on one SM.
    "act",
    "gpu_util",
    "gr_engine_active",
    "sm_active",
    "sm_occupancy",
    "tensor_active",
    "dram_active",
    "mem_copy_util",
    # GPU_UTIL less copy time, minus (sm_active or gr_engine_active): kernels running but SMs idle
    # (NCCL, tiny kernels)
    "util_gap",
    "tensor_per_act",  # tensor pipe share while the GPU is active
    "dram_minus_tensor",  # bandwidth-bound kernels: DRAM busy, tensor pipes not
    "pcie_rx_frac",  # host -> device vs link capacity
    "pcie_tx_frac",
    "nvlink_frac",  # NVLink bytes vs the GPU's NVLink capacity
    "cpu_per_gpu",  # cores used per GPU
    "cpu_limit_frac",  # cores used / CPU limit
    "cpu_node_frac",  # cores used / node CPUs
    "job_share_node_cpu",  # this pod's share of the node's busy CPU (low: neighbours make the noise)
    "cpu_throttled_frac",
    "mem_limit_frac",
    "node_cpu_busy_frac",
    "node_cpu_iowait_frac",
    "node_cpu_system_frac",
    "node_disk_busy_frac",
    "node_mem_used_frac",
    "node_swap_used_frac",
    "log_majfault",
    "node_psi_cpu_some",
    "node_psi_io_some",
    "node_psi_io_full",
    "node_psi_mem_some",
    "node_psi_mem_full",
    "net_rx_share",  # network receive / (network receive + block reads): remote storage reads
    "net_symmetry",  # min(rx, tx) / max(rx, tx): ~1 for all-reduce traffic, ~0 for storage reads
    "log_net_per_gpu",
    "log_read_per_gpu",
    "read_rel_peak",  # reads / the window's own peak: a flat plateau near 1 suggests a saturated source
    "net_rel_peak",
    "sc_psi_cpu_some",
    "sc_psi_io_some",
    "sc_psi_io_full",
    "sc_psi_mem_some",
    "sc_psi_mem_full",
    "sc_cpu_limit_frac",
    "sc_throttled_frac",
    "sc_log_majfault",
    "sc_iowait_procs_share",
    "pcie_rel_peak",  # host-to-device bytes / the window's own peak: a saturated link runs flat at its ceiling
    "pcie_per_act",  # host-to-device link share per unit of GPU activity: bytes the GPUs wait for
    "power_rel_peak",  # power / the window's own peak: dips mark stalls even without PROF fields
    # iowait over the node's CPU time not spent busy: waiting on storage while cores are free to run
    # (remote storage through FUSE/NFS sits in iowait while the CPU is not saturated; a CPU-bound node
    # has no idle time left to wait in)
    "iowait_of_idle",
    # GPU_UTIL minus the graphics engine's busy time: small kernels with launch gaps in between read as
    # busy on GPU_UTIL's short sample period, not on GR_ENGINE_ACTIVE (NCCL kernels read busy on both)
    "util_gr_gap",
    "sm_fill",  # sm_active / gr_engine_active: how much of the GPU its kernels fill while it is busy
    # min(rx, tx) / max(rx, tx) on PCIe: GPUDirect RDMA collectives cross it equally both ways, while
    # input batches only go host to device (RDMA bypasses node_network_*, so net_symmetry misses them)
    "pcie_symmetry",
    # --- features that read the same in any scenario family (docs/scenarios.md, "Where the gap is")
    # GPU saturated by whichever pipe limits its kernels: tensor cores, HBM (DRAM_ACTIVE tops out near
    # 0.8 in practice) or SM issue; compute-, bandwidth- and small-kernel-bound models all read high
    "gpu_any_pipe",
    # time in kernels that use neither the tensor pipes nor HBM, with no collective bytes moving:
    # launch/host-overhead-bound (NCCL kernels read the same, but with bytes on a link)
    "launch_gap",
    # the busiest GPU link against its datasheet ceiling: PCIe either way, NVLink
    "link_busy",
    # bytes that cross PCIe equally both ways, against the link: GPUDirect RDMA collectives
    "pcie_fabric_frac",
    # the job's cores against the cores it may use: min(limit, node cores not used by neighbours)
    "cpu_own_sat",
    # the pod's runnable processes per core it may use (the sidecar sees its own cgroup only)
    "sc_runnable_per_core",
    # the job's cores per runnable process: ~1 when each process (loader worker) keeps a core busy
    "cpu_per_running",
    # the pod's processes pinned at a full core, per core the pod uses: ~1 when its loader is a few
    # workers, each limited by its own serial speed (too few workers; num_workers=0 pins the trainer);
    # ~0 for readers that sleep on remote storage, or workers that share cores or a quota
    "busy_core_share",
    # input bytes (network receive plus block reads) against the window's own peak
    "input_rel_peak",
    # power against its peak per unit of GPU activity: ~1 when power follows activity
    "power_per_act",
    # major faults together with kernel CPU time: reclaim and swap-in (memory-mapped reads fault without
    # the system time of reclaim)
    "fault_sys",
    # stall shares with their background removed (see DEAD_BAND); the raw shares stay for the evidence
    *(f"{name}_band" for name in BANDED),
    # the job's IO pressure (its own cgroup, else the node's) while its GPU is idle: storage stalls that
    # cost GPU time, whatever level of pressure a busy GPU's readers show beside it
    "io_stall_idle",
    # the job's own CPU pressure or throttling while its GPU is idle (pressure as in cpu_psi_own)
    "cpu_stall_idle",
    # the job's own CPU pressure where it can be the job's limit: throttling counts in full, pressure
    # only as far as the job's cgroup uses the cores it may use (cpu_own_sat) or its processes keep a
    # core each busy (cpu_per_running). A cgroup far below both and never throttled waits for cores
    # that other processes hold: a busy node, not a loader that needs more CPU
    "cpu_psi_own",
    # the job's memory pressure (its cgroup, else the node's) while its GPU is idle
    "mem_stall_idle",
    # each stall's share of the job's stalls while its GPU idles (plus a floor, STALL_FLOOR_SHARE):
    # which wait explains the idle GPU, whatever level of pressure a cluster's exporters read
    "io_stall_share",
    "cpu_stall_share",
    "mem_stall_share",
    # kernels running on GPU_UTIL's clock with the SMs mostly idle while collective bytes move (NVLink,
    # PCIe both ways, or the network both ways at gradient volume): NCCL kernels waiting on their links,
    # the counterpart of launch_gap
    "collective_gap",
    # the HBM's bandwidth in use: DRAM_ACTIVE against its practical ceiling. MEM_COPY_UTIL is no
    # stand-in: it counts time with any read or write in flight and reads high under compute kernels too
    "hbm_busy",
    # power against the enforced limit (DCGM_FI_DEV_POWER_MGMT_LIMIT where exported, else the board's
    # TDP): math-bound kernels draw it to the limit, waiting GPUs stay near their floor
    "power_limit_frac",
    # the SM clock against the pod's own highest clock in the window, while the GPU works: power
    # management moves it sample to sample, so only its own range means something; boards are compared
    # with the Job's peers (``clock_peer_min``), never with a datasheet's maximum
    "clock_rel_peak",
    # the SM clock in MHz while the GPU works: context, read across the Job's pods only
    "sm_clock_mhz",
    # the share of the pod's GPUs reporting a power-cap, thermal or hardware slowdown (clock-event reasons)
    "clock_slowdown",
    # FP32 and FP16 pipe activity: math the tensor pipes do not carry
    "fp32_active",
    "fp16_active",
    # InfiniBand/RoCE bytes both ways per GPU (log10): RDMA traffic that netdev counters never see
    "log_ib_per_gpu",
    # the pod's pages back from swap and its OOM kills (its own cgroup): host memory pressure
    "sc_log_swapin",
    "sc_oom_kills",
)
SERIES_INDEX: dict[str, int] = {name: i for i, name in enumerate(SERIES)}
