"""Whose are the waits of a pod that swaps: the memory's.

A pod short of memory swaps: each major fault sends its task to sleep while the kernel reads the page
back, and reclaim and swap-in run on the node's cores in kernel mode. On a node whose cores those
kernel threads keep busy, the pod's tasks also queue for a CPU, so the pod's CPU pressure rises while
the job itself uses few cores: a real trainer under a 384 MiB limit with a 1 GiB working set faulted
1,147 pages a second with the node's cores 15 % in kernel mode, and its tasks waited for a CPU 56 % of
the time while it used 0.16 of the cores it could have (tests/data/real-memory). More CPU would not
help it; more memory would.

Its reads wait too: a swapped-out page comes back from the swap device, so the pod's tasks sleep in
D state and the disk is busy, which reads like a dataset on slow storage. An H200 loop sampling a 3 GiB
in-memory dataset under a 1,280 MiB limit faulted 12,106 pages a second with its IO pressure at 0.28
and the node's swap half full (tests/data/gpu-memory). A memory-mapped dataset faults as often (family
B's mmap readers 10^4-10^4.8 a second) but fills no swap: its pages are the file's.
"""

from __future__ import annotations

from collections.abc import Mapping

from bottleneck_operator.analysis.collective_waits import move_probability
from bottleneck_operator.analysis.evidence_gates import GateInput, GateResult
from bottleneck_operator.contract.verdict import Bottleneck

# The node's CPU time in kernel mode from which the kernel's fault handling can keep the cores busy
# (0.15 in the recording above). CPU-bound Jobs read as much (the simulators' saturated loaders
# 0.13-0.2), which is why the job's own use of its cores and host memory's evidence are read too.
KERNEL_BUSY = 0.1
# The share of the cores the job may use under which its own work does not explain its CPU wait.
OWN_CPU_LOW = 0.5
# Memory's evidence from the host (pressure or major faults), not from GPU memory bandwidth.
_HOST_MEMORY = frozenset({"sc_psi_mem_some", "node_psi_mem_some", "node_majfault_ps"})
# CPU's evidence that is the job's own quota: a throttled job is CPU-bound whatever else stalls it.
_OWN_QUOTA = frozenset({"cpu_cores_vs_limit", "sc_cpu_limit_frac", "cpu_throttled_frac", "sc_throttled_frac"})
# Swap in use (of the node's swap space) and major faults a second (log10) from which the pod's reads
# are pages coming back from swap: the simulators' IO-bound Jobs fill under 0.12 of their swap.
SWAP_IN_USE = 0.2
SWAPPING_FAULTS_LOG = 3.0


def cpu_waits_on_faults(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """CPU waits on a node whose cores serve page faults are the memory's: CPU's probability moves to Memory.

    Only where host memory's evidence holds, the node's cores spend ``KERNEL_BUSY`` of their time in
    kernel mode or more, the job uses under ``OWN_CPU_LOW`` of the cores it may use, and no CPU quota
    binds it. ``probs`` (class name -> probability) is changed in place; returns the note for the
    verdict when the move dethrones the model's favourite.
    """
    cpu, memory = Bottleneck.CPU, Bottleneck.MEMORY
    mem_gate, cpu_gate = gates[memory], gates[cpu]
    if probs[cpu.value] <= 0 or not mem_gate.holds or mem_gate.best not in _HOST_MEMORY:
        return []
    if cpu_gate.holds and cpu_gate.best in _OWN_QUOTA:
        return []
    kernel, own = g.f("node_cpu_system_frac.mean"), g.f("cpu_own_sat.mean")
    if kernel is None or kernel < KERNEL_BUSY or own is None or own >= OWN_CPU_LOW:
        return []
    return move_probability(
        probs,
        cpu,
        memory,
        f"The pod's tasks wait for a CPU, but the job uses {100 * own:.0f} % of the cores it may use while the "
        f"node's cores spend {100 * kernel:.0f} % of their time in the kernel and the pod is short of memory "
        f"({mem_gate.what}): page faults and reclaim hold the cores, so the job is Memory-bound.",
    )


def io_waits_on_swap(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """IO waits of a pod that swaps are the memory's: IO's probability moves to Memory.

    Only where host memory's evidence holds, ``SWAP_IN_USE`` of the node's swap is in use and the pod
    faults 10^``SWAPPING_FAULTS_LOG`` pages a second or more: its own faults where the collector reads
    them, as a neighbour that swaps fills the node's swap and faults without the pod's reads being
    its pages, else the node's. ``probs`` is changed in place; returns the note for the verdict when
    the move dethrones the model's favourite.
    """
    io, memory = Bottleneck.IO, Bottleneck.MEMORY
    mem_gate = gates[memory]
    if probs[io.value] <= 0 or not mem_gate.holds or mem_gate.best not in _HOST_MEMORY:
        return []
    own = g.f("sc_log_majfault.mean")
    swap, faults = g.f("node_swap_used_frac.mean"), own if own is not None else g.f("log_majfault.mean")
    if swap is None or faults is None or swap < SWAP_IN_USE or faults < SWAPPING_FAULTS_LOG:
        return []
    return move_probability(
        probs,
        io,
        memory,
        f"The pod's reads wait, but it faults {10**faults:,.0f} pages a second with {100 * swap:.0f} % of the "
        "node's swap in use: the reads are its own pages coming back from swap, so the job is Memory-bound.",
    )
