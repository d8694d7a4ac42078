"""The candidate signals of each class's evidence: what is compared with what, and how it reads.

Each class's typical signatures (docs/analysis.md) as a table: the feature read, the reference it is
compared with (a capacity or a typical value), the level at which it starts to count and the sentence
that says it. :mod:`.evidence` picks the strongest present ones for a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.analysis.features.series_names import FeatureKey, Series
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

__all__ = ["CANDIDATES", "IDLE", "Candidate"]


@dataclass(frozen=True)
class Candidate:
    """One signal that can support a class.

    Attributes:
        feature: the feature name read from the feature row.
        signal: the name shown in the report.
        unit: unit of observed and reference.
        reference: the capacity or typical value compared with.
        low: the value at which the signal starts to count (strength 0).
        high_is_bad: False when a low value is the evidence (e.g. GPU activity for stall classes).
        message: sentence template with {v} (observed, formatted) and {r} (reference).
        mechanism: the one mechanism of its class it speaks for (host memory or HBM), None for any.
    """

    feature: FeatureKey
    signal: str
    unit: str
    reference: float
    low: float
    message: str
    high_is_bad: bool = True
    mechanism: Mechanism | None = None

    def strength(self, v: float) -> float:
        span = self.reference - self.low
        s = (v - self.low) / span if span else 0.0
        return max(0.0, min(1.5, s))


IDLE = Candidate(
    Series.ACT.mean,
    "gpu_active",
    "ratio",
    0.8,
    0.8,
    "GPUs were active {v} of the time; effective use needs about {r} (so they waited on something else).",
)

CANDIDATES: dict[Bottleneck, tuple[Candidate, ...]] = {
    Bottleneck.IO: (
        Candidate(
            Series.SC_PSI_IO_SOME.mean,
            "sc_psi_io_some",
            "ratio",
            0.5,
            0.05,
            "The pod's own processes were stalled on IO {v} of the time (cgroup IO pressure).",
        ),
        Candidate(
            Series.SC_IOWAIT_PROCS_SHARE.mean,
            "sc_procs_iowait",
            "ratio",
            0.5,
            0.05,
            "{v} of the trainer's busy processes were blocked in disk/network reads (state D).",
        ),
        Candidate(
            Series.READ_REL_PEAK.p50,
            "read_rate_vs_peak",
            "ratio",
            0.9,
            0.5,
            "Reads sat at {v} of their own peak for most of the window: a flat ceiling, typical of a saturated source.",
        ),
        Candidate(
            Series.NET_RX_SHARE.mean,
            "node_net_rx_share",
            "ratio",
            0.9,
            0.5,
            "{v} of the bytes read arrived over the network: the dataset lives on remote storage.",
        ),
    ),
    Bottleneck.CPU: (
        Candidate(
            Series.CPU_LIMIT_FRAC.mean, "cpu_cores_vs_limit", "ratio", 1.0, 0.7, "The job used {v} of its CPU limit."
        ),
        Candidate(
            Series.CPU_THROTTLED_FRAC.mean,
            "cpu_throttled_frac",
            "ratio",
            0.5,
            0.05,
            "The container was CPU-throttled (CFS) in {v} of scheduling periods; {r} is heavy throttling.",
        ),
        Candidate(
            Series.SC_THROTTLED_FRAC.mean,
            "sc_throttled_frac",
            "ratio",
            0.5,
            0.05,
            "The pod's cgroup was throttled in {v} of periods.",
        ),
        Candidate(
            Series.SC_PSI_CPU_SOME.mean,
            "sc_psi_cpu_some",
            "ratio",
            0.5,
            0.05,
            "The pod's processes waited for a CPU {v} of the time (cgroup CPU pressure).",
        ),
        Candidate(
            Series.BUSY_CORE_SHARE.mean,
            "sc_procs_busy",
            "ratio",
            1.0,
            0.3,
            "{v} of the pod's CPU time ran in processes each pinned at a full core: loader workers held to "
            "one core apiece, with cores to spare.",
            mechanism=Mechanism.TOO_FEW_WORKERS,
        ),
    ),
    Bottleneck.INTERCONNECT: (
        Candidate(
            Series.PCIE_RX_FRAC.p90,
            "pcie_rx_bps",
            "ratio",
            0.8,
            0.5,
            "Host-to-GPU PCIe traffic reached {v} of the link's capacity (p90); pinned copies fill it near {r}, "
            "pageable ones stop at a host memcpy's ~10 GB/s.",
            mechanism=Mechanism.PCIE,
        ),
        Candidate(
            Series.PCIE_TX_FRAC.p90,
            "pcie_tx_bps",
            "ratio",
            0.8,
            0.5,
            "GPU-to-host PCIe traffic reached {v} of the link's capacity (p90).",
            mechanism=Mechanism.PCIE,
        ),
        Candidate(
            Series.NVLINK_FRAC.p90,
            "nvlink_bps",
            "ratio",
            0.7,
            0.25,
            "NVLink traffic reached {v} of the GPUs' NVLink bandwidth (p90).",
            mechanism=Mechanism.NVLINK,
        ),
        Candidate(
            Series.NET_SYMMETRY.mean,
            "node_net_rx_tx_symmetry",
            "ratio",
            0.9,
            0.5,
            "Network receive and transmit were balanced ({v}) at all-reduce volume, the pattern of gradient exchange rather than data loading.",
            mechanism=Mechanism.NETWORK,
        ),
        Candidate(
            Series.LOG_NET_PER_GPU.mean,
            "node_net_bytes_per_gpu",
            "log10 B/s",
            9.0,
            7.5,
            "The nodes' network moved {v} per GPU.",
            mechanism=Mechanism.NETWORK,
        ),
        Candidate(
            Series.LOG_IB_PER_GPU.mean,
            "node_infiniband_bytes_per_gpu",
            "log10 B/s",
            9.0,
            7.5,
            "The nodes' InfiniBand/RoCE ports moved {v} per GPU (RDMA, which netdev counters never see).",
            mechanism=Mechanism.NETWORK,
        ),
    ),
    Bottleneck.GPU: (
        Candidate(
            Series.ACT.mean,
            "gpu_active",
            "ratio",
            0.9,
            0.6,
            "GPUs were active {v} of the time: compute is the busiest stage.",
        ),
        Candidate(
            Series.TENSOR_ACTIVE.mean, "tensor_active", "ratio", 0.5, 0.1, "Tensor pipes were active {v} of cycles."
        ),
        Candidate(Series.SM_OCCUPANCY.mean, "sm_occupancy", "ratio", 0.5, 0.2, "SM occupancy averaged {v}."),
        # what math draws, read without the profiling fields too: bf16 matmuls held an H200 at 0.99 of
        # its limit, a GPU waiting or launching tiny kernels drew 0.18-0.30 (tests/data/gpu-compute)
        Candidate(
            Series.POWER_LIMIT_FRAC.mean,
            "power_of_limit",
            "ratio",
            0.95,
            0.6,
            "GPUs drew {v} of their board's power limit; kernels bound by their math hold about {r}.",
        ),
    ),
    Bottleneck.MEMORY: (
        Candidate(
            Series.TENSOR_ACTIVE.mean,
            "tensor_active",
            "ratio",
            0.05,
            0.5,
            "Tensor pipes were active {v} of cycles: the kernels do little math per byte they move.",
            high_is_bad=False,
            mechanism=Mechanism.HBM_BANDWIDTH,
        ),
        Candidate(
            Series.DRAM_ACTIVE.mean,
            "dram_active",
            "ratio",
            0.8,
            0.45,
            "GPU memory bandwidth was in use {v} of cycles; about {r} is the practical peak.",
            mechanism=Mechanism.HBM_BANDWIDTH,
        ),
        Candidate(
            Series.DRAM_MINUS_TENSOR.mean,
            "dram_active_minus_tensor_active",
            "ratio",
            0.6,
            0.2,
            "DRAM activity exceeded tensor-pipe activity by {v}: kernels wait on memory, not on math.",
            mechanism=Mechanism.HBM_BANDWIDTH,
        ),
        Candidate(
            Series.SC_LOG_SWAPIN.mean,
            "sc_swapin_ps",
            "log10 1/s",
            3.0,
            0.5,
            "The pod's pages came back from swap at {v} per second.",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
        ),
        Candidate(
            Series.SC_OOM_KILLS.mean,
            "sc_oom_kills",
            "1/s",
            0.01,
            0.0,
            "The OOM killer ended the pod's processes ({v} per second on average).",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
        ),
        Candidate(
            Series.SC_PSI_MEM_SOME.mean,
            "sc_psi_mem_some",
            "ratio",
            0.3,
            0.02,
            "The pod's processes stalled on memory {v} of the time.",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
        ),
        Candidate(
            Series.MEM_LIMIT_FRAC.mean,
            "mem_working_set_vs_limit",
            "ratio",
            0.95,
            0.8,
            "The working set was {v} of the memory limit.",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
        ),
    ),
}
