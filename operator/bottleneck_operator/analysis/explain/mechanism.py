"""How the verdict's class limits the job: its mechanism, by rules with a physical reading.

The classifier says which pipeline stage bounds the step; the mechanism says why, which is what a user
acts on (more workers or a higher CPU limit; a local cache or a faster store; fewer, larger kernels).
Each class has few mechanisms and each is told apart by one or two signals that physically separate
them, so these are plain documented rules over the window's features, not a second model:

- GPU: ``launch-bound`` when the GPU spends ``LAUNCH_GAP`` of its time or more in small kernels (neither
  the tensor pipes nor HBM busy, the SMs not filled) and the host launches from a majority of a core
  per GPU (small kernels, eager mode); else ``compute``.
- Memory: ``host-memory-pressure`` when the pod stalls on memory (PSI "some" at XProf's 5 % bar; the
  node's PSI only where the pod's was not collected), swaps pages in or has processes OOM-killed; else
  ``hbm-bandwidth`` when DRAM activity is at half its practical peak or more (never read from
  ``MEM_COPY_UTIL``, a share of time, not of bandwidth).
- Interconnect: ``pcie`` when one-way copies keep their copy path busy most of the time, more than
  NVLink; ``network`` for a job that spans nodes (its all-reduce crosses the NIC, or the PCIe bus both
  ways with GPUDirect RDMA) or whose network traffic is as much sent as received at gradient volume;
  ``nvlink`` when NVLink carries at least the PCIe share and 5 % of its bandwidth; else ``pcie``.
- IO: ``network-storage`` when most bytes read arrive over the NIC, one way or with the local disk
  carrying under 5 % of them; else ``local-disk``.
- CPU: ``throttled`` when the job's own cgroup is CFS-throttled in 5 % of periods or more;
  ``saturated`` when it uses most of the cores it may use (its limit and its node's idle cores); else
  ``too-few-workers`` (cores stand idle while the loader cannot keep up).

Each level is a cited constant or a comparison of measured quantities: docs/analysis.md ("Mechanisms",
and "Numbers in the explanations, with their source").
"""

from __future__ import annotations

from collections.abc import Callable

from bottleneck_operator.analysis.checks.vetoes import DRAM_HALF, WAITED_ON
from bottleneck_operator.analysis.explain.candidates import MAJORITY
from bottleneck_operator.analysis.features.derived import COLLECTIVE_NET, COLLECTIVE_NET_LOG, FABRIC_SYMMETRY
from bottleneck_operator.analysis.features.extract import value
from bottleneck_operator.analysis.features.kernel_time import LAUNCH_GAP, small_kernel_time
from bottleneck_operator.analysis.features.series_names import Extra, FeatureKey, Series
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


def _gpu(x: FloatArray) -> Mechanism:
    small = small_kernel_time(lambda name: value(x, name))
    cpu = _f(x, Series.CPU_PER_GPU.mean)
    # the launching thread is on a core most of the time: a majority of a core per GPU process
    if small is None or small < LAUNCH_GAP or (cpu is not None and cpu < MAJORITY):
        return Mechanism.COMPUTE
    return Mechanism.LAUNCH_BOUND


def _memory(x: FloatArray) -> Mechanism | None:
    # Memory PSI "some" at XProf's 5 % bar, swap-ins or OOM kills: the pod's own cgroup, else (not
    # collected) its node's PSI. Major faults are how memory-mapped datasets read (TELEMETRY.md), which
    # is IO, and swap in use is occupancy, not a stall: neither says pressure by itself.
    psi = _f(x, Series.SC_PSI_MEM_SOME.mean, Series.NODE_PSI_MEM_SOME.mean)
    swapins, kills = _f(x, Series.SC_LOG_SWAPIN.mean), _f(x, Series.SC_OOM_KILLS.mean)
    if (psi is not None and psi >= WAITED_ON) or (swapins or 0.0) > 0.0 or (kills or 0.0) > 0.0:
        return Mechanism.HOST_MEMORY_PRESSURE
    # DRAM_ACTIVE alone measures HBM bandwidth in use; MEM_COPY_UTIL is a share of time (DCGM field docs).
    # At half its practical peak or more the HBM interface is not idle (the Memory veto's own level).
    dram = _f(x, Series.DRAM_ACTIVE.mean)
    if dram is not None and dram >= DRAM_HALF:
        return Mechanism.HBM_BANDWIDTH
    # The host's memory was watched and shows no pressure: a memory stall left is the GPU's own memory.
    if dram is None and psi is not None:
        return Mechanism.HBM_BANDWIDTH
    return None


def _interconnect(x: FloatArray) -> Mechanism:
    rx = _f(x, Series.PCIE_RX_FRAC.mean)
    tx = _f(x, Series.PCIE_TX_FRAC.mean)
    # one-way traffic is copies, balanced traffic collectives: the features' own dividing line
    one_way = rx is not None and (tx is None or tx <= FABRIC_SYMMETRY * rx)
    # The copy path (copies against the rate their path allows: the link's for pinned memory, a host
    # memcpy's for pageable) busy most of the time, and busier than NVLink: the copies are the wait.
    path, nvlink = _f(x, Series.LINK_BUSY.mean) or 0.0, _f(x, Series.NVLINK_FRAC.mean)
    if one_way and (rx or 0.0) >= WAITED_ON and path >= MAJORITY and (nvlink or 0.0) < path:
        return Mechanism.PCIE
    nodes = _f(x, Extra.N_NODES.key) or 1.0
    if nodes > 1 or _exchanges_over_network(x):
        return Mechanism.NETWORK
    # NVLink carrying at least the PCIe share and the links veto's 5 % of its bandwidth: under that it
    # cannot bound the step, and the link waited on is PCIe, seen or not (DEV fields carry no PCIe bytes)
    if nvlink is not None and (_f(x, Extra.HAS_NVLINK.key) or 0.0) > 0 and nvlink >= max(rx or 0.0, WAITED_ON):
        return Mechanism.NVLINK
    return Mechanism.PCIE


def _exchanges_over_network(x: FloatArray) -> bool:
    """Traffic as much sent as received at gradient volume: the collectives cross the NIC, even when
    the telemetry shows the job's pods on one node (its peers may be another Job's, or unseen)."""
    symmetry = _f(x, Series.NET_SYMMETRY.mean)
    volume = _f(x, Series.LOG_NET_PER_GPU.mean)
    return symmetry is not None and volume is not None and symmetry >= COLLECTIVE_NET and volume >= COLLECTIVE_NET_LOG


def _io(x: FloatArray) -> Mechanism | None:
    share = _f(x, Series.NET_RX_SHARE.mean)
    if share is None:
        return None
    symmetry = _f(x, Series.NET_SYMMETRY.mean)
    # All-reduce traffic is symmetric (the features' collectives line); storage reads are one-way. When
    # the local disk carries under 5 % of the bytes read, the receive traffic is the data even if
    # gradients share the NIC.
    one_way = symmetry is None or symmetry < COLLECTIVE_NET
    disk_idle = share >= 1.0 - WAITED_ON
    if share >= MAJORITY and (one_way or disk_idle):
        return Mechanism.NETWORK_STORAGE
    return Mechanism.LOCAL_DISK


def _cpu(x: FloatArray) -> Mechanism:
    # CFS throttling in 5 % of periods or more: the CPU veto's bar for a quota that binds
    throttled = _f(x, Series.SC_THROTTLED_FRAC.mean, Series.CPU_THROTTLED_FRAC.mean)
    if throttled is not None and throttled >= WAITED_ON:
        return Mechanism.THROTTLED
    # ``cpu_own_sat``: the pod's CPU use over the cores it may use (its limit, and the cores its node's
    # neighbours leave idle). Using most of them, the cores are the limit, whatever its processes do (a
    # loader with a worker per core pins every one); using fewer, cores stand idle while the loader
    # cannot keep up (processes pinned at a full core each: workers held by their own serial speed).
    own = _f(x, Series.CPU_OWN_SAT.mean)
    if own is not None and own >= MAJORITY:
        return Mechanism.SATURATED
    return Mechanism.TOO_FEW_WORKERS


_RULES: dict[Bottleneck, Callable[[FloatArray], Mechanism | None]] = {
    Bottleneck.GPU: _gpu,
    Bottleneck.MEMORY: _memory,
    Bottleneck.INTERCONNECT: _interconnect,
    Bottleneck.IO: _io,
    Bottleneck.CPU: _cpu,
}


def decide_mechanism(cls: Bottleneck, x: FloatArray, *, gpus_never_waited: bool = False) -> Mechanism | None:
    """The mechanism of a verdict's class in one window.

    Args:
        cls: the verdict's class.
        x: the window's feature row (columns as ``features.FEATURE_NAMES``).
        gpus_never_waited: the GPUs ran kernels 95 % of the time or more by both readings (the veto
            :func:`..checks.vetoes.gpus_never_wait`). Host memory is then ruled out as every input
            stage is, so a Memory verdict left standing can only be the GPU's own memory.

    Returns:
        One of ``MECHANISMS[cls]``, or None for Unknown or when no signal tells.
    """
    if cls is Bottleneck.MEMORY and gpus_never_waited:
        return Mechanism.HBM_BANDWIDTH
    rule = _RULES.get(cls)
    return rule(x) if rule is not None else None
