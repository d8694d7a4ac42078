"""How the verdict's class limits the job: its mechanism, by rules with a physical reading.

The classifier says which pipeline stage bounds the step; the mechanism says why, which is what a user
acts on (more workers or a higher CPU limit; a local cache or a faster store; fewer, larger kernels).
Each class has few mechanisms and each is told apart by one or two signals that physically separate
them, so these are plain documented rules over the window's features, not a second model:

- GPU: ``launch-bound`` when the GPU spends a fifth of its time or more in small kernels (neither
  the tensor pipes nor HBM busy, the SMs not filled) and the host launches from at least half a core
  per GPU (small kernels, eager mode); else ``compute``.
- Memory: ``host-memory-pressure`` when the pod or node stalls on memory (PSI), faults heavily or
  swaps; else ``hbm-bandwidth`` when DRAM activity is high with the tensor pipes idle (never read
  from ``MEM_COPY_UTIL``, a share of time, not of bandwidth).
- Interconnect: ``pcie`` when host-to-device copies fill the link one way; ``network`` for a job that
  spans nodes (its all-reduce crosses the NIC, or the PCIe bus both ways with GPUDirect RDMA) or whose
  network traffic is as much sent as received at gradient volume;
  ``nvlink`` when NVLink carries more of the link than PCIe; else ``pcie`` (peer copies without NVLink).
- IO: ``network-storage`` when reads arrive over the NIC (receive far above block reads, one way),
  else ``local-disk``.
- CPU: ``throttled`` when the job's own cgroup is CFS-throttled; ``saturated`` when the node has no
  idle cores left (or the pod uses all of its limit); else ``too-few-workers`` (cores stand idle
  while the loader cannot keep up).

Thresholds are in docs/analysis.md ("Mechanisms") with what to try for each.
"""

from __future__ import annotations

from collections.abc import Callable

from bottleneck_operator.analysis.features.derived import COLLECTIVE_NET, COLLECTIVE_NET_LOG
from bottleneck_operator.analysis.features.extract import value
from bottleneck_operator.analysis.features.kernel_time import LAUNCH_GAP, small_kernel_time
from bottleneck_operator.analysis.features.series_names import Extra, FeatureKey, Series
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator.contract.window import FloatArray

# GPU: the share of time in small kernels from which their launches bind the step (the launch gate's
# level; the mechanism reads it whatever the links carry)
LAUNCH_SMALL_KERNELS_MIN = LAUNCH_GAP
# The launching host thread: about a core per GPU process.
LAUNCH_CPU_PER_GPU_MIN = 0.5
# Memory: a pressure-stall share, major faults a second (log10) and swap use that mean host pressure.
HOST_PSI_MIN = 0.05
HOST_MAJFAULT_LOG_MIN = 3.0  # 1,000 major faults/s
HOST_SWAP_MIN = 0.15
# DRAM activity that means bandwidth-bound kernels (~0.8 is HBM's practical peak).
HBM_DRAM_MIN = 0.4
# Interconnect: host-to-device share of the link, and how one-way it must be to be copies, not peers.
H2D_FRAC_MIN = 0.18
H2D_ONE_WAY_MAX = 0.3
# or, below that share, copies from the share at which the copy gate reads them by time that fill
# their copy path this much
H2D_STAGED_MIN = 0.05
H2D_PATH_MIN = 0.5
# NVLink busy at least this share of its bandwidth to be the link a job waits on: an all-reduce bound
# by NVLink moves bytes at its rate for the exposed part of every step
NVLINK_MIN = 0.1
# IO: the share of bytes read over the NIC, and the symmetry above which NIC traffic is all-reduce.
NET_READ_SHARE_MIN = 0.5
ALLREDUCE_SYMMETRY_MIN = 0.6
DISK_IDLE_LOG_MAX = 5.5  # block reads under ~300 kB/s per GPU (log10 bytes/s)
# CPU: the throttled share of CFS periods, and the busy node / used limit that mean no idle cores.
THROTTLED_MIN = 0.1
NODE_BUSY_SATURATED = 0.85
LIMIT_SATURATED = 0.9
# Loaders that already use this share of their nodes' cores gain little from more workers.
JOB_SHARE_SATURATED = 0.5
# Most of the pod's CPU time in processes pinned at a full core each, with the cores it may use well
# short of busy: workers limited by their own serial speed, whatever the node's neighbours do. A
# loader with a worker per core pins them too (tests/data/gpu-saturated: 0.69 pinned at 0.89 of its cores).
PINNED_SHARE_MIN = 0.6
OWN_SAT_PINNED_MAX = 0.7


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
    if small is None or small < LAUNCH_SMALL_KERNELS_MIN or (cpu is not None and cpu < LAUNCH_CPU_PER_GPU_MIN):
        return Mechanism.COMPUTE
    return Mechanism.LAUNCH_BOUND


def _memory(x: FloatArray) -> Mechanism | None:
    psi = [v for v in (_f(x, Series.SC_PSI_MEM_SOME.mean), _f(x, Series.NODE_PSI_MEM_SOME.mean)) if v is not None]
    faults = _f(x, Series.SC_LOG_MAJFAULT.mean, Series.LOG_MAJFAULT.mean)
    swap = _f(x, Series.NODE_SWAP_USED_FRAC.mean)
    if (
        (psi and max(psi) >= HOST_PSI_MIN)
        or (faults is not None and faults >= HOST_MAJFAULT_LOG_MIN)
        or (swap is not None and swap >= HOST_SWAP_MIN)
    ):
        return Mechanism.HOST_MEMORY_PRESSURE
    # DRAM_ACTIVE alone measures HBM bandwidth in use; MEM_COPY_UTIL is a share of time (DCGM field docs)
    dram = _f(x, Series.DRAM_ACTIVE.mean)
    if dram is not None and dram >= HBM_DRAM_MIN:
        return Mechanism.HBM_BANDWIDTH
    # The host was watched and shows no pressure: a memory stall left is the GPU's own memory.
    if dram is None and (psi or faults is not None):
        return Mechanism.HBM_BANDWIDTH
    return None


def _interconnect(x: FloatArray) -> Mechanism:
    rx = _f(x, Series.PCIE_RX_FRAC.mean)
    tx = _f(x, Series.PCIE_TX_FRAC.mean)
    one_way = rx is not None and (tx is None or tx <= H2D_ONE_WAY_MAX * rx)
    if one_way and (rx or 0.0) >= H2D_FRAC_MIN:
        return Mechanism.PCIE
    # pageable copies fill their path at a host memcpy's rate, a small share of a fast link (0.15 of
    # Gen5: tests/data/gpu-h2d): the copy path full while the GPUs wait, with NVLink not what fills it
    path, nvlink = _f(x, Series.LINK_BUSY.mean) or 0.0, _f(x, Series.NVLINK_FRAC.mean)
    if one_way and (rx or 0.0) >= H2D_STAGED_MIN and path >= H2D_PATH_MIN and (nvlink or 0.0) < path / 2:
        return Mechanism.PCIE
    nodes = _f(x, Extra.N_NODES.key) or 1.0
    if nodes > 1 or _exchanges_over_network(x):
        return Mechanism.NETWORK
    if nvlink is not None and (_f(x, Extra.HAS_NVLINK.key) or 0.0) > 0 and nvlink >= max(rx or 0.0, NVLINK_MIN):
        return Mechanism.NVLINK
    # NVLink nearly idle: the link waited on is PCIe, seen or not (DEV fields carry no PCIe bytes)
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
    reads = _f(x, Series.LOG_READ_PER_GPU.mean)
    # All-reduce traffic is symmetric; storage reads are one-way. When the local disk is idle, the
    # receive traffic is the data even if gradients share the NIC.
    one_way = symmetry is None or symmetry < ALLREDUCE_SYMMETRY_MIN
    disk_idle = reads is not None and reads < DISK_IDLE_LOG_MAX
    if share >= NET_READ_SHARE_MIN and (one_way or disk_idle):
        return Mechanism.NETWORK_STORAGE
    return Mechanism.LOCAL_DISK


def _cpu(x: FloatArray) -> Mechanism:
    throttled = _f(x, Series.SC_THROTTLED_FRAC.mean, Series.CPU_THROTTLED_FRAC.mean)
    if throttled is not None and throttled >= THROTTLED_MIN:
        return Mechanism.THROTTLED
    pinned, own = _f(x, Series.BUSY_CORE_SHARE.mean), _f(x, Series.CPU_OWN_SAT.mean)
    if pinned is not None and pinned >= PINNED_SHARE_MIN and (own is None or own < OWN_SAT_PINNED_MAX):
        return Mechanism.TOO_FEW_WORKERS
    busy = _f(x, Series.NODE_CPU_BUSY_FRAC.mean)
    limit = _f(x, Series.SC_CPU_LIMIT_FRAC.mean, Series.CPU_LIMIT_FRAC.mean)
    per_pod = _f(x, Series.CPU_NODE_FRAC.mean)
    pods, nodes = _f(x, Extra.N_PODS.key) or 1.0, _f(x, Extra.N_NODES.key) or 1.0
    # The job's own share of its nodes' cores: its pods on one node share them.
    job_share = per_pod * pods / nodes if per_pod is not None else None
    if (
        (busy is not None and busy >= NODE_BUSY_SATURATED)
        or (limit is not None and limit >= LIMIT_SATURATED)
        or (job_share is not None and job_share >= JOB_SHARE_SATURATED)
    ):
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
