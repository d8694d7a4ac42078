"""The candidate signals of each class's evidence: what is compared with what, and how it reads.

Each class's typical signatures (docs/analysis.md) as a table: the feature read, the reference it is
compared with and the level from which it counts, and the sentence that says it. :mod:`.evidence`
picks the strongest present ones for a verdict. Every reference and level is a capacity, a cited
constant or a definition (docs/analysis.md, "Numbers in the explanations, with their source"):

- a share of time waited (PSI "some", CFS throttling) counts from XProf's 5 % bar (``WAITED_ON``) and
  is compared with XProf's 20 %, from which a step is "highly input-bound";
- a share of a link's capacity counts from the same 5 % (bytes over capacity is the least time the link
  was busy) and is compared with what fills it: the rate pinned copies were measured at for PCIe
  (``COPY_ENGINE_RATE``), the whole bandwidth for NVLink;
- a share with a documented practical peak is compared with it (``DRAM_PEAK``, from ``DRAM_HALF``; the
  DCGM profiling documentation's SM-activity levels for GPU activity);
- a share with no cited level is compared with the whole, counted from none or from a majority (more
  bytes over the NIC than from the disks), so shares rank against each other as measured;
- an event that stalls whenever it happens (a swap-in, an OOM kill) counts when there is any at all,
  with no reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bottleneck_operator.analysis.checks.reads import INFINIBAND_BPS
from bottleneck_operator.analysis.checks.vetoes import DRAM_HALF
from bottleneck_operator.analysis.features.derived import COPY_ENGINE_RATE
from bottleneck_operator.analysis.features.levels import DRAM_PEAK, WAITED_ON
from bottleneck_operator.analysis.features.series_names import FeatureKey, Series
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

__all__ = [
    "CANDIDATES",
    "COLLECTIVE_NET",
    "COLLECTIVE_NET_LOG",
    "FABRIC_SYMMETRY",
    "HIGHLY_WAITED_ON",
    "IDLE",
    "LAUNCH_GAP",
    "MAJORITY",
    "Candidate",
    "exchanges_over_network",
    "speaks_for",
]

HIGHLY_WAITED_ON = 0.2  # XProf: input >= 20 % of the step is "highly input-bound" (TELEMETRY.md, "Peers' rules")
MAJORITY = 0.5  # more than half of a whole: more bytes over the NIC than from the disks, most of a limit
# DCGM's profiling documentation (TELEMETRY.md): SM activity of 0.8 or more is necessary for effective
# use, under 0.5 likely ineffective.
SM_EFFECTIVE = 0.8
SM_INEFFECTIVE = 0.5
# The slowest InfiniBand port, as the links are read against it (checks/reads.py), in log10 bytes/s.
INFINIBAND_LOG = math.log10(INFINIBAND_BPS)
# The explanations' own lines for which way traffic goes; the classifier reads the balances and volumes
# as features and draws no such line (docs/analysis.md, "Numbers in the explanations, with their source").
# Network traffic as much received as sent is all-reduce (~1), storage reads are one way (~0).
COLLECTIVE_NET = 0.7
# Balanced network traffic counts as gradient exchange from 100 MB/s per GPU (log10 bytes/s, both ways).
COLLECTIVE_NET_LOG = 8.0
# PCIe traffic with less than half its bytes coming back is copies; more is peers or GPUDirect RDMA.
FABRIC_SYMMETRY = 0.5
# Time in small kernels, outside collectives, from which their launches bind the step: the small-kernel
# line of the features' LAUNCH_PIPES, measured on small MLPs (tests/data/gpu-launch, gpu-launch-wide).
LAUNCH_GAP = 0.2


def exchanges_over_network(f: Callable[[FeatureKey], float | None]) -> bool:
    """Traffic as much sent as received at gradient volume: the collectives cross the NIC, even when
    the telemetry shows the job's pods on one node (its peers may be another Job's, or unseen)."""
    symmetry, volume = f(Series.NET_SYMMETRY.mean), f(Series.LOG_NET_PER_GPU.mean)
    return symmetry is not None and volume is not None and symmetry >= COLLECTIVE_NET and volume >= COLLECTIVE_NET_LOG


@dataclass(frozen=True)
class Candidate:
    """One signal that can support a class.

    Attributes:
        feature: the feature name read from the feature row.
        signal: the name shown in the report.
        unit: unit of observed and reference.
        reference: the capacity or cited level compared with; None for an event that counts when there is
            any at all (the signal then has full strength past ``low``).
        low: the value from which the signal counts (strength 0); above ``reference`` when a low value
            is the evidence.
        message: sentence template with {v} (observed, formatted) and {r} (reference).
        mechanism: the one mechanism of its class it speaks for (host memory or HBM), None for any.
        quiet: for an event with no reference, the sentence when none happened: shown, if at all, only as
            what was looked at.
    """

    feature: FeatureKey
    signal: str
    unit: str
    reference: float | None
    low: float
    message: str
    mechanism: Mechanism | None = None
    quiet: str = ""

    def strength(self, v: float) -> float:
        """How far ``v`` is from where the signal counts towards its reference, 0 to 1."""
        if self.reference is None:
            return 1.0 if v > self.low else 0.0
        span = self.reference - self.low
        s = (v - self.low) / span if span else 0.0
        return max(0.0, min(1.0, s))


def _wait(feature: FeatureKey, signal: str, message: str, mechanism: Mechanism | None = None) -> Candidate:
    """A share of time waited: counted from XProf's 5 % bar, against its 20 % "highly input-bound"."""
    return Candidate(feature, signal, "ratio", HIGHLY_WAITED_ON, WAITED_ON, message, mechanism)


# GPU activity against all of the time: a GPU that never waits is active throughout.
IDLE = Candidate(
    Series.ACT.mean,
    "gpu_active",
    "ratio",
    1.0,
    0.0,
    "GPUs were active {v} of the time; a GPU that never waits is active all of it.",
)

CANDIDATES: dict[Bottleneck, tuple[Candidate, ...]] = {
    Bottleneck.IO: (
        _wait(
            Series.SC_PSI_IO_SOME.mean,
            "sc_psi_io_some",
            "The pod's own processes were stalled on IO {v} of the time (cgroup IO pressure); from {r} "
            "XProf calls a step highly input-bound.",
        ),
        # at the reference, as many of the busy processes wait in reads as run
        Candidate(
            Series.SC_IOWAIT_PROCS_SHARE.mean,
            "sc_procs_iowait",
            "ratio",
            MAJORITY,
            0.0,
            "{v} of the trainer's busy processes were blocked in disk/network reads (state D); at {r} as "
            "many wait as run.",
        ),
        Candidate(
            Series.NET_RX_SHARE.mean,
            "node_net_rx_share",
            "ratio",
            1.0,
            MAJORITY,
            "{v} of the bytes read arrived over the network: the dataset lives on remote storage.",
            # read from the data path (:mod:`.datapath`), the job's totals the mechanism reads too
            mechanism=Mechanism.NETWORK_STORAGE,
        ),
    ),
    Bottleneck.CPU: (
        Candidate(
            Series.CPU_LIMIT_FRAC.mean,
            "cpu_cores_vs_limit",
            "ratio",
            1.0,
            MAJORITY,
            "The job used {v} of its CPU limit.",
        ),
        _wait(
            Series.CPU_THROTTLED_FRAC.mean,
            "cpu_throttled_frac",
            "The container was CPU-throttled (CFS) in {v} of scheduling periods; XProf calls a step that "
            "waits {r} of its time highly input-bound.",
            Mechanism.THROTTLED,
        ),
        _wait(
            Series.SC_THROTTLED_FRAC.mean,
            "sc_throttled_frac",
            "The pod's cgroup was throttled in {v} of periods.",
            Mechanism.THROTTLED,
        ),
        _wait(
            Series.SC_PSI_CPU_SOME.mean,
            "sc_psi_cpu_some",
            "The pod's processes waited for a CPU {v} of the time (cgroup CPU pressure).",
        ),
        Candidate(
            Series.BUSY_CORE_SHARE.mean,
            "sc_procs_busy",
            "ratio",
            1.0,
            MAJORITY,
            "{v} of the pod's CPU time ran in processes each pinned at a full core: loader workers held to "
            "one core apiece.",
            mechanism=Mechanism.TOO_FEW_WORKERS,
        ),
    ),
    Bottleneck.INTERCONNECT: (
        Candidate(
            Series.PCIE_RX_FRAC.p90,
            "pcie_rx_bps",
            "ratio",
            COPY_ENGINE_RATE,
            WAITED_ON,
            "Host-to-GPU PCIe traffic reached {v} of the link's capacity (p90); pinned copies were measured "
            "filling {r} of it, pageable ones stop at a host memcpy's ~10 GB/s.",
            mechanism=Mechanism.PCIE,
        ),
        Candidate(
            Series.PCIE_TX_FRAC.p90,
            "pcie_tx_bps",
            "ratio",
            COPY_ENGINE_RATE,
            WAITED_ON,
            "GPU-to-host PCIe traffic reached {v} of the link's capacity (p90).",
            mechanism=Mechanism.PCIE,
        ),
        Candidate(
            Series.NVLINK_FRAC.p90,
            "nvlink_bps",
            "ratio",
            1.0,
            WAITED_ON,
            "NVLink traffic reached {v} of the GPUs' NVLink bandwidth (p90).",
            mechanism=Mechanism.NVLINK,
        ),
        Candidate(
            Series.NET_SYMMETRY.mean,
            "node_net_rx_tx_symmetry",
            "ratio",
            1.0,
            COLLECTIVE_NET,
            "Network receive and transmit were balanced ({v}) at all-reduce volume, the pattern of gradient "
            "exchange rather than data loading.",
            mechanism=Mechanism.NETWORK,
        ),
        Candidate(
            Series.LOG_NET_PER_GPU.mean,
            "node_net_bytes_per_gpu",
            "log10 B/s",
            INFINIBAND_LOG,
            COLLECTIVE_NET_LOG,
            "The nodes' network moved {v} per GPU, against {r} for one InfiniBand EDR port.",
            mechanism=Mechanism.NETWORK,
        ),
        Candidate(
            Series.LOG_IB_PER_GPU.mean,
            "node_infiniband_bytes_per_gpu",
            "log10 B/s",
            INFINIBAND_LOG,
            COLLECTIVE_NET_LOG,
            "The nodes' InfiniBand/RoCE ports moved {v} per GPU (RDMA, which netdev counters never see), "
            "against {r} for one EDR port.",
            mechanism=Mechanism.NETWORK,
        ),
    ),
    Bottleneck.GPU: (
        Candidate(
            Series.ACT.mean,
            "gpu_active",
            "ratio",
            SM_EFFECTIVE,
            SM_INEFFECTIVE,
            "GPUs were active {v} of the time: compute is the busiest stage; DCGM counts {r} as needed for "
            "effective use.",
        ),
        Candidate(
            Series.TENSOR_ACTIVE.mean,
            "tensor_active",
            "ratio",
            1.0,
            0.0,
            "Tensor pipes were active {v} of cycles ({r}: a tensor instruction every other cycle).",
        ),
        Candidate(
            Series.POWER_LIMIT_FRAC.mean,
            "power_of_limit",
            "ratio",
            1.0,
            0.0,
            "GPUs drew {v} of their board's power limit (the enforced one where exported, else its TDP).",
        ),
    ),
    Bottleneck.MEMORY: (
        # inverted: the evidence is how little of the whole the tensor pipes used, from all of it to none
        Candidate(
            Series.TENSOR_ACTIVE.mean,
            "tensor_active",
            "ratio",
            0.0,
            1.0,
            "Tensor pipes were active {v} of cycles.",
            mechanism=Mechanism.HBM_BANDWIDTH,
        ),
        Candidate(
            Series.DRAM_ACTIVE.mean,
            "dram_active",
            "ratio",
            DRAM_PEAK,
            DRAM_HALF,
            "GPU memory bandwidth was in use {v} of cycles; about {r} is the practical peak.",
            mechanism=Mechanism.HBM_BANDWIDTH,
        ),
        Candidate(
            Series.DRAM_MINUS_TENSOR.mean,
            "dram_active_minus_tensor_active",
            "ratio",
            DRAM_PEAK,
            0.0,
            "DRAM activity exceeded tensor-pipe activity by {v}: kernels wait on memory, not on math.",
            mechanism=Mechanism.HBM_BANDWIDTH,
        ),
        Candidate(
            Series.SC_LOG_SWAPIN.mean,
            "sc_swapin_ps",
            "log10 1/s",
            None,
            0.0,
            "The pod's pages came back from swap at {v} per second: each one stalls a task on a read.",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
            quiet="No page of the pod came back from swap.",
        ),
        Candidate(
            Series.SC_OOM_KILLS.mean,
            "sc_oom_kills",
            "1/s",
            None,
            0.0,
            "The OOM killer ended the pod's processes ({v} per second on average).",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
            quiet="The OOM killer ended none of the pod's processes.",
        ),
        _wait(
            Series.SC_PSI_MEM_SOME.mean,
            "sc_psi_mem_some",
            "The pod's processes stalled on memory {v} of the time.",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
        ),
        # cAdvisor's working set counts active page cache: against the limit (its definition's full
        # scale) it is what was looked at, never a stall by itself
        Candidate(
            Series.MEM_LIMIT_FRAC.mean,
            "mem_working_set_vs_limit",
            "ratio",
            1.0,
            MAJORITY,
            "The working set was {v} of the memory limit (it counts active page cache, so no stall by itself).",
            mechanism=Mechanism.HOST_MEMORY_PRESSURE,
        ),
    ),
}


def speaks_for(cls: Bottleneck, signal: str) -> Mechanism | None:
    """The one mechanism of ``cls`` that a signal of its evidence speaks for, None for any."""
    return next((c.mechanism for c in CANDIDATES.get(cls, ()) if c.signal == signal and c.mechanism), None)
