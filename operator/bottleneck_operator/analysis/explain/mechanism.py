"""How the verdict's class limits the job: its mechanism, by rules with a physical reading.

The classifier says which pipeline stage bounds the step; the mechanism says why, which is what a user
acts on (more workers or a higher CPU limit; a local cache or a faster store; fewer, larger kernels).
Each class has few mechanisms and each is told apart by one or two signals that physically separate
them, so these are plain documented rules, not a second model. Where a rule reads a quantity that the
evidence, headroom or capacity also report, it reads it where they do (the window's measured
quantities, :class:`..checks.reads.Reads`, and the job's totals, :mod:`.datapath`), so a report cannot
name one mechanism and show the signals of another (:mod:`.agreement` checks it):

- GPU: ``launch-bound`` when the GPU spends ``LAUNCH_GAP`` of its time or more in small kernels (neither
  the tensor pipes nor HBM busy, the SMs not filled) and the host launches from a majority of a core
  per GPU (small kernels, eager mode); else ``compute``.
- Memory: ``host-memory-pressure`` when the pod stalls on memory (the step account's measured wait:
  PSI "some" from XProf's 5 % bar; the node's PSI only where the pod's was not collected), swaps pages
  in or has processes OOM-killed; else
  ``hbm-bandwidth`` when DRAM activity is at half its practical peak or more (never read from
  ``MEM_COPY_UTIL``, a share of time, not of bandwidth).
- Interconnect: ``pcie`` when one-way copies keep their copy path busy most of the time, more than
  NVLink; ``network`` for a job that spans nodes (its all-reduce crosses the NIC, or the PCIe bus both
  ways with GPUDirect RDMA) or whose network traffic is as much sent as received at gradient volume;
  ``nvlink`` when NVLink carries at least the PCIe share and 5 % of its bandwidth; else ``pcie``.
- IO: ``network-storage`` when most bytes read arrive over the NIC, one way or with the local disk
  carrying under 5 % of them; else ``local-disk``. This one reads the job's totals through
  :func:`.datapath.data_path`, as the IO evidence and capacity do.
- CPU: ``throttled`` when the job's own cgroup is CFS-throttled in 5 % of periods or more (as the
  step account reads it);
  ``saturated`` when it uses most of the cores it may use (its limit and its node's idle cores); else
  ``too-few-workers`` (cores stand idle while the loader cannot keep up).

Each level is a cited constant or a comparison of measured quantities: docs/analysis.md ("Mechanisms",
and "Numbers in the explanations, with their source").
"""

from __future__ import annotations

from collections.abc import Callable

from bottleneck_operator.analysis.checks.reads import Reads
from bottleneck_operator.analysis.checks.vetoes import DRAM_HALF
from bottleneck_operator.analysis.explain.account import step_account
from bottleneck_operator.analysis.explain.candidates import (
    FABRIC_SYMMETRY,
    LAUNCH_GAP,
    MAJORITY,
    exchanges_over_network,
)
from bottleneck_operator.analysis.explain.datapath import data_path
from bottleneck_operator.analysis.features.extract import value
from bottleneck_operator.analysis.features.kernel_time import small_kernel_time
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.analysis.features.series_names import Extra, FeatureKey, Series
from bottleneck_operator.analysis.features.summary import JobSummary
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator.contract.window import FloatArray

# Every level here is a cited constant of the class path, a majority (more than half of a whole: of a
# core's time, of the bytes read, of the cores it may use) or a comparison of two measured quantities
# (docs/analysis.md, "Numbers in the explanations, with their source").


def _f(x: FloatArray, *names: FeatureKey) -> float | None:
    """The first of the named features that is present."""
    for name in names:
        v = value(x, name)
        if v is not None:
            return v
    return None


def launches_bind(x: FloatArray) -> bool:
    """Small kernels launched one after another bind the step: the GPU waits on the launching host thread.

    The GPU mechanism and the launch advice both read this, so a report cannot name one and advise the other.
    """
    small = small_kernel_time(lambda name: value(x, name))
    cpu = _f(x, Series.CPU_PER_GPU.mean)
    # the launching thread is on a core most of the time: a majority of a core per GPU process. NCCL's
    # kernels waiting on the network read as small kernels too: gradient exchange is not launches
    return not (
        small is None
        or small < LAUNCH_GAP
        or (cpu is not None and cpu < MAJORITY)
        or exchanges_over_network(lambda n: value(x, n))
    )


def _gpu(x: FloatArray, _r: Reads) -> Mechanism:
    return Mechanism.LAUNCH_BOUND if launches_bind(x) else Mechanism.COMPUTE


def _memory(x: FloatArray, r: Reads) -> Mechanism | None:
    # The pod's measured memory wait as the step account holds it (memory PSI "some" from XProf's 5 %
    # bar, no more than the GPUs idled), swap-ins or OOM kills; the node's PSI only where the pod's was
    # not collected. Major faults are how memory-mapped datasets read (TELEMETRY.md), which is IO, and
    # swap in use is occupancy, not a stall: neither says pressure by itself.
    wait = step_account(r).waits.get(Bottleneck.MEMORY)
    node_psi = _f(x, Series.NODE_PSI_MEM_SOME.mean) if r.mem_wait is None else None
    node_waits = node_psi is not None and node_psi >= WAITED_ON
    if wait is not None or node_waits or (r.swapins or 0.0) > 0.0 or (r.oom_kills or 0.0) > 0.0:
        return Mechanism.HOST_MEMORY_PRESSURE
    # DRAM_ACTIVE alone measures HBM bandwidth in use; MEM_COPY_UTIL is a share of time (DCGM field docs).
    # At half its practical peak or more the HBM interface is not idle (the Memory veto's own level).
    if r.dram is not None and r.dram >= DRAM_HALF:
        return Mechanism.HBM_BANDWIDTH
    # The host's memory was watched and shows no pressure: a memory stall left is the GPU's own memory.
    if r.dram is None and (r.mem_wait is not None or node_psi is not None):
        return Mechanism.HBM_BANDWIDTH
    return None


def _interconnect(x: FloatArray, _r: Reads) -> Mechanism:
    rx = _f(x, Series.PCIE_RX_FRAC.mean)
    tx = _f(x, Series.PCIE_TX_FRAC.mean)
    # one-way traffic is copies, balanced traffic collectives: the features' own dividing line
    one_way = rx is not None and (tx is None or tx <= FABRIC_SYMMETRY * rx)
    # The copy path (copies against the rate their path allows: the link's for pinned memory, a host
    # memcpy's for pageable) busy most of the time the GPU waits, and busier than NVLink: the copies are
    # the wait. `link_busy` is the busiest of NVLink, the PCIe bytes both ways and the one-way copies
    # counted as far as the GPU idles: where the copies are the busiest, over the idle share it is their
    # own share of their path while the GPU waits.
    busy, nvlink = _f(x, Series.LINK_BUSY.mean) or 0.0, _f(x, Series.NVLINK_FRAC.mean)
    copies = busy if busy > max(nvlink or 0.0, _f(x, Series.PCIE_FABRIC_FRAC.mean) or 0.0) else 0.0
    idle = 1.0 - min(max(_f(x, Series.ACT.mean) or 0.0, 0.0), 1.0)
    path = min(copies / idle, 1.0) if idle > 0.0 else copies
    if one_way and (rx or 0.0) >= WAITED_ON and path >= MAJORITY and (nvlink or 0.0) < path:
        return Mechanism.PCIE
    nodes = _f(x, Extra.N_NODES.key) or 1.0
    if nodes > 1 or exchanges_over_network(lambda n: value(x, n)):
        return Mechanism.NETWORK
    # NVLink carrying at least the PCIe share and XProf's 5 % of its bandwidth: under that its bytes do
    # not show it waited on (they bound the bandwidth term only, so a latency-bound all-reduce over
    # NVLink is named PCIe here), and the link named is PCIe, seen or not (DEV fields carry no PCIe bytes)
    if nvlink is not None and (_f(x, Extra.HAS_NVLINK.key) or 0.0) > 0 and nvlink >= max(rx or 0.0, WAITED_ON):
        return Mechanism.NVLINK
    return Mechanism.PCIE


def _cpu(x: FloatArray, r: Reads) -> Mechanism:
    # CFS throttling in 5 % of periods or more, as the step account and the CPU veto read it
    if r.throttled is not None and r.throttled >= WAITED_ON:
        return Mechanism.THROTTLED
    # ``cpu_own_sat``: the pod's CPU use over the cores it may use (its limit, and the cores its node's
    # neighbours leave idle). Using most of them, the cores are the limit, whatever its processes do (a
    # loader with a worker per core pins every one); using fewer, cores stand idle while the loader
    # cannot keep up (processes pinned at a full core each: workers held by their own serial speed).
    own = _f(x, Series.CPU_OWN_SAT.mean)
    if own is not None and own >= MAJORITY:
        return Mechanism.SATURATED
    return Mechanism.TOO_FEW_WORKERS


_RULES: dict[Bottleneck, Callable[[FloatArray, Reads], Mechanism | None]] = {
    Bottleneck.GPU: _gpu,
    Bottleneck.MEMORY: _memory,
    Bottleneck.INTERCONNECT: _interconnect,
    Bottleneck.CPU: _cpu,
}


def decide_mechanism(
    cls: Bottleneck,
    x: FloatArray,
    summary: JobSummary | None = None,
    reads: Reads | None = None,
    *,
    gpus_never_waited: bool = False,
) -> Mechanism | None:
    """The mechanism of a verdict's class in one window.

    Args:
        cls: the verdict's class.
        x: the window's feature row (columns as ``features.FEATURE_NAMES``).
        summary: the window's totals, which IO's mechanism reads (None: no IO mechanism).
        reads: the window's measured quantities, which the Memory and CPU mechanisms read as the step
            account and the evidence do (None: nothing measured).
        gpus_never_waited: the GPUs ran kernels 95 % of the time or more by both readings (the veto
            :func:`..checks.vetoes.gpus_never_wait`). Host memory is then ruled out as every input
            stage is, so a Memory verdict left standing can only be the GPU's own memory.

    Returns:
        One of ``MECHANISMS[cls]``, or None for Unknown or when no signal tells.
    """
    if cls is Bottleneck.MEMORY and gpus_never_waited:
        return Mechanism.HBM_BANDWIDTH
    if cls is Bottleneck.IO:
        return data_path(summary).mechanism if summary is not None else None
    rule = _RULES.get(cls)
    return rule(x, reads or Reads()) if rule is not None else None
