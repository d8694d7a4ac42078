"""Evidence gates: the signals that physically imply each class, with the level at which they count.

A class's verdict stands only when one of its gates holds. The gates read the job's own signals: for
CPU the job's cgroup at its limit, CFS-throttled, waiting for a CPU, or filling every core of its node;
node-wide CPU busy or pressure is context, since remote-storage readers and noisy neighbours produce it
too (TELEMETRY.md, "CPU"). Traffic-shaped signals count only with volume behind them: receive and
transmit in balance mean all-reduce only when the bytes are there, and a PCIe link at 39 % is not
saturated. The framebuffer's fill is never evidence (the caching allocator keeps it reserved).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bottleneck_operator.analysis.derived import COLLECTIVE_NET_LOG
from bottleneck_operator.analysis.features import value
from bottleneck_operator.analysis.kernel_time import LAUNCH_GAP, kernel_time, launch_gap
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import FloatArray

NET_VOLUME_LOG = COLLECTIVE_NET_LOG  # 100 MB/s per GPU: below it, balanced traffic is not gradient exchange
# Share of the PCIe link each way under which balanced traffic is not a collective: 1 % of the slowest
# link in the hardware table (Gen3 x16, ~16 GB/s) is 160 MB/s each way, above the network's floor.
# GPUDirect RDMA moves all-reduce over PCIe at a few percent of the link (NIC rate / link rate), so
# the floor sits low; input copies are one-way and fail the balance test instead.
PEER_VOLUME = 0.01
EXPOSED_COMM = 0.1  # share of wall time in communication-only kernels that counts as a stall
GPUS_WAIT = 0.8  # GPUs' busy share over training samples up to which they have idle time to explain


@dataclass(frozen=True)
class GateInput:
    """What a gate reads: the feature row and the step-time quantities measured on training samples."""

    x: FloatArray
    busy: float | None
    comm: float | None
    cpu_plateau: float | None = None  # the job's CPU over training samples: median / p90 (1 = flat)

    def f(self, name: str) -> float | None:
        return value(self.x, name)


@dataclass(frozen=True)
class Gate:
    """One signal that implies a class once it reaches ``threshold``.

    ``read`` returns the observed value (None when the signal is missing or its precondition, such as a
    volume check, fails).
    """

    name: str
    threshold: float
    what: str
    read: Callable[[GateInput], float | None]

    def level(self, g: GateInput) -> float | None:
        """Observed value over the threshold (>= 1 holds), None when the signal is missing."""
        v = self.read(g)
        return None if v is None else v / self.threshold


def _feat(name: str) -> Callable[[GateInput], float | None]:
    return lambda g: g.f(name)


def links_carry_traffic(f: Callable[[str], float | None]) -> bool:
    """Links carry real volume: the network at 100 MB/s per GPU or more, or NVLink or PCIe busy."""
    net = f("log_net_per_gpu.mean") or 0.0
    links = max(f("nvlink_frac.p90") or 0.0, f("pcie_rx_frac.p90") or 0.0, f("pcie_tx_frac.p90") or 0.0)
    return net >= NET_VOLUME_LOG or links >= 0.1


def _with_traffic(read: Callable[[GateInput], float | None]) -> Callable[[GateInput], float | None]:
    """The reading only when links carry real volume (:func:`links_carry_traffic`)."""

    def gated(g: GateInput) -> float | None:
        return read(g) if links_carry_traffic(g.f) else None

    return gated


def _remote_reads_flat(g: GateInput) -> float | None:
    """Remote-storage reads flat at a plateau while the GPUs wait: an object store or network file system
    delivering all it can.

    Readers of HTTP object stores wait in S state, not D state, so no iowait or IO pressure shows
    (docs/telemetry.md); what shows is the network receive rate pinned at its own ceiling, carrying
    nearly all the job's input, while the GPUs sit idle part of the time.
    """
    busy, share, flat = g.busy, g.f("net_rx_share.mean"), g.f("net_rel_peak.p50")
    if busy is None or share is None or flat is None or busy > GPUS_WAIT or share < 0.8:
        return None
    return flat


def _workers_saturated(g: GateInput) -> float | None:
    """The job's busy cores sit on a flat plateau while the GPUs wait and nothing waits on storage.

    A fixed number of loader processes each at 100 % of a core (``num_workers=0`` is the main process
    alone) holds the job's CPU at a ceiling however many cores the node has free; storage-bound readers
    wait in IO pressure instead, and a job the GPUs pace has no GPU idle time to explain.
    """
    flat = g.cpu_plateau
    if flat is None or not _gpus_wait_on_the_loader(g):
        return None
    pinned = g.f("busy_core_share.mean")
    if pinned is not None and pinned < NO_PINNED:  # the collector saw no process at a full core
        return None
    return flat


# The job's CPU plateau (median over 90th percentile on training samples) from which its busy cores sit
# at a ceiling: loader processes each at a full core read 0.97-1.0 (the real loader loops, 0.971 with
# sixteen workers on sixteen cores), a reader's CPU follows its data's arrival
WORKERS_FLAT = 0.93

# The pod's CPU time in processes at a full core under which none is: a flat CPU is then not workers
# at their ceiling, whatever it is
NO_PINNED = 0.2


def _processes_pinned(g: GateInput) -> float | None:
    """The share of the pod's CPU time in processes pinned at a full core each, while the GPUs wait
    and nothing waits on storage.

    A loader worker held to one core by its own serial speed reads 0.9 of a core or more all the
    time; a reader of remote storage sleeps on its socket, and workers throttled by a quota or
    time-sliced on a full node get less than a core each.
    """
    return g.f("busy_core_share.mean") if _gpus_wait_on_the_loader(g) else None


def _gpus_wait_on_the_loader(g: GateInput) -> bool:
    """The GPUs have idle time to explain (busy ``GPUS_WAIT`` or less) and the pod's readers do not wait
    on storage."""
    return g.busy is not None and g.busy <= GPUS_WAIT and not _waits_on_storage(g)


def _waits_on_storage(g: GateInput) -> bool:
    """The job's own readers wait on storage: the pod's IO pressure, or its trainer processes in D state.

    The pod's cgroup accounts its own tasks' IO waits, a network file system's reads included (they
    sleep in ``io_schedule``). The node's iowait and IO pressure are not the job's: a neighbour's
    writes or another pod's memory-mapped dataset raise them while this job's loaders sit at their
    CPU ceiling, as node CPU signals are not evidence for CPU. Where they do come from this job, IO's
    own gates hold on them too, and the model weighs the two.
    """
    return any(
        (lv := gate.level(g)) is not None and lv >= 1.0
        for gate in GATES[Bottleneck.IO]
        if gate.name in _POD_STORAGE_WAITS
    )


# GPU_UTIL above the graphics engine when host-to-device copies stream all the time and the SMs idle
# (0.18 on an H200, tests/data/gpu-h2d), and the one-way link share from which copies count by time
COPY_UTIL_SHARE = 0.18
COPY_MIN_LINK = 0.05


def _pcie_covers_wait(g: GateInput) -> float | None:
    """The share of the GPUs' idle time that host-to-device copies fill.

    Read from the link's bytes (pinned copies run near the link's rate, so its busy share is their
    time; with volume: the link at least 15 % busy), or from the copy engine's time where the GPUs
    mostly idle: pageable copies run at a host memcpy's 5-12 GB/s, a small share of a fast link, and
    ``GPU_UTIL`` counts the copy engine's time above the graphics engine's: 0.18 for pageable copies
    streaming all the time, their bytes at the engine's rate, while a host core stages the next
    chunk (COPY_UTIL_SHARE; tests/data/gpu-h2d). Only for
    copies: traffic as heavy both ways is peer-to-peer or GPUDirect (:func:`_pcie_peer_traffic`).
    """
    rx, busy = g.f("pcie_rx_frac.mean"), g.busy
    if rx is None or busy is None or (g.f("pcie_tx_frac.mean") or 0.0) >= 0.5 * rx:
        return None
    idle = max(1.0 - busy, 0.05)
    levels = [rx / idle] if rx >= 0.15 else []
    gap = g.f("util_gr_gap.mean")
    if gap is not None and rx >= COPY_MIN_LINK and busy <= 0.5:
        levels.append(gap / COPY_UTIL_SHARE / idle)
    return max(levels) if levels else None


def _pcie_peer_traffic(g: GateInput) -> float | None:
    """PCIe receive and transmit balanced at volume: peer-to-peer collectives or GPUDirect RDMA, not input copies.

    RDMA (InfiniBand, RoCE, EFA) bypasses ``node_network_*``; with GPUDirect the NIC reads and writes
    GPU memory across PCIe, as much each way (docs/telemetry.md).
    """
    rx, tx = g.f("pcie_rx_frac.mean"), g.f("pcie_tx_frac.mean")
    if rx is None or tx is None or min(rx, tx) < PEER_VOLUME:
        return None
    return min(rx, tx) / max(rx, tx)


def _both_ways_at_volume(g: GateInput) -> float | None:
    """The lesser direction of the nodes' network traffic, per GPU, in units of 100 MB/s.

    A ring all-reduce sends as much as it receives; dataset readers and remote-storage clients mostly
    receive. So the smaller of receive and transmit (``min(rx, tx) = total x s / (1 + s)`` with ``s`` the
    symmetry) is what gradient exchange can account for: 0.3 MB/s in balance is heartbeat traffic, not
    gradients, and 2 GB/s received with 10 MB/s sent is a dataset.
    """
    total, sym = g.f("log_net_per_gpu.mean"), g.f("net_symmetry.mean")
    if total is None or sym is None:
        return None
    return (10**total) * sym / (1.0 + sym) / 10**NET_VOLUME_LOG


# GPU memory's busy share from which kernels stream HBM: DRAM activity, or where it is not collected
# NVML's memory utilization (``DCGM_FI_DEV_MEM_COPY_UTIL``). HBM-bound: the real loops read DRAM 0.58
# and 0.89, NVML 0.72 and 1.00 (tests/data/gpu-streamed, gpu-hbm), both families draw DRAM 0.60 and
# NVML 0.55 or more (5th percentile); compute-bound: the real loops 0.05-0.34 and 0.06-0.42
# (gpu-compute-fp32, gpu-compute, gpu-transformer), both families 0.50 or under (95th)
MEMORY_BUSY = 0.55


def memory_busy(g: GateInput) -> float | None:
    """Device memory's busy share, where DRAM activity (the precise reading) was not collected.

    Every NVIDIA GPU reports it with its utilization, profiling fields or not.
    """
    return g.f("mem_copy_util.mean") if g.f("dram_active.mean") is None else None


# Memory's gates that read the GPU's own memory bandwidth (the HBM-bound mechanism).
HBM_GATES = frozenset({"dram_active", "mem_copy_util"})


def streams_hbm(g: GateInput) -> bool:
    """One of Memory's HBM gates holds: the kernels stream GPU memory near its practical peak."""
    return any(
        (lv := gate.level(g)) is not None and lv >= 1.0 for gate in GATES[Bottleneck.MEMORY] if gate.name in HBM_GATES
    )


# IO's gates that read the pod's own tasks waiting on storage.
_POD_STORAGE_WAITS = frozenset({"sc_psi_io_some", "sc_procs_iowait"})

GATES: dict[Bottleneck, tuple[Gate, ...]] = {
    Bottleneck.IO: (
        Gate("sc_psi_io_some", 0.15, "the pod's processes stalled on IO", _feat("sc_psi_io_some.mean")),
        Gate("sc_procs_iowait", 0.2, "trainer processes blocked in reads", _feat("sc_iowait_procs_share.mean")),
        Gate("node_psi_io_some", 0.2, "tasks on the node stalled on IO", _feat("node_psi_io_some.mean")),
        Gate("node_cpu_iowait_frac", 0.05, "CPUs idle waiting on IO", _feat("node_cpu_iowait_frac.mean")),
        Gate(
            "remote_reads_flat", 0.8, "remote-storage reads flat at their ceiling while GPUs wait", _remote_reads_flat
        ),
    ),
    Bottleneck.CPU: (
        Gate("cpu_cores_vs_limit", 0.85, "the job's CPU at its limit", _feat("cpu_limit_frac.mean")),
        Gate("sc_cpu_limit_frac", 0.85, "the pod's cgroup at its CPU limit", _feat("sc_cpu_limit_frac.mean")),
        Gate("cpu_throttled_frac", 0.1, "the container CFS-throttled", _feat("cpu_throttled_frac.mean")),
        Gate("sc_throttled_frac", 0.1, "the pod's cgroup CFS-throttled", _feat("sc_throttled_frac.mean")),
        Gate("sc_psi_cpu_some", 0.15, "the pod's processes waiting for a CPU", _feat("sc_psi_cpu_some.mean")),
        Gate("cpu_cores_vs_node", 0.8, "the job's own CPU filling its node", _feat("cpu_node_frac.mean")),
        Gate(
            "cpu_workers_saturated",
            WORKERS_FLAT,
            "the job's busy cores flat at a ceiling while GPUs wait",
            _workers_saturated,
        ),
        Gate("sc_procs_busy", 0.6, "the pod's processes pinned at a full core while GPUs wait", _processes_pinned),
    ),
    Bottleneck.INTERCONNECT: (
        Gate("pcie_rx_bps", 0.6, "host-to-GPU PCIe near the link's capacity", _feat("pcie_rx_frac.p90")),
        Gate("pcie_tx_bps", 0.6, "GPU-to-host PCIe near the link's capacity", _feat("pcie_tx_frac.p90")),
        Gate("pcie_busy_during_wait", 0.5, "host-to-GPU copies filling the GPUs' idle time", _pcie_covers_wait),
        Gate(
            "pcie_peer_symmetry", 0.7, "balanced PCIe traffic at volume (peer-to-peer collectives)", _pcie_peer_traffic
        ),
        Gate("nvlink_bps", 0.5, "NVLink near its bandwidth", _feat("nvlink_frac.p90")),
        Gate(
            "exposed_communication",
            EXPOSED_COMM,
            "communication not hidden by compute",
            _with_traffic(lambda g: g.comm),
        ),
        Gate(
            "gpu_util_minus_sm_active",
            0.2,
            "kernels running with SMs idle while links carry traffic",
            _with_traffic(_feat("util_gap.mean")),
        ),
        Gate(
            "node_net_rx_tx_symmetry",
            0.5,
            "network traffic both ways, at 50 MB/s per GPU or more",
            _both_ways_at_volume,
        ),
    ),
    Bottleneck.MEMORY: (
        Gate("dram_active", MEMORY_BUSY, "GPU memory bandwidth near its practical peak", _feat("dram_active.mean")),
        Gate("mem_copy_util", MEMORY_BUSY, "device memory read or written most of the time", memory_busy),
        Gate("sc_psi_mem_some", 0.05, "the pod's processes stalled on memory", _feat("sc_psi_mem_some.mean")),
        Gate("node_psi_mem_some", 0.05, "tasks on the node stalled on memory", _feat("node_psi_mem_some.mean")),
        Gate("node_majfault_ps", 2.5, "major page faults (log10 per second)", _feat("log_majfault.mean")),
        # No gate on the working set against the limit: cAdvisor's working set counts active page cache,
        # so a pod reading a cached dataset sits at its limit without a stall. What stalls it shows in
        # the pressure and fault gates above.
    ),
    Bottleneck.GPU: (
        Gate("gpu_busy", 0.6, "GPUs busy on training samples", lambda g: g.busy),
        Gate("gpu_util", 0.8, "kernels running most of the time", lambda g: kernel_time(g.f)),
        Gate(
            "gpu_launch_gaps",
            LAUNCH_GAP,
            "kernels running back to back on mostly idle SMs (launch overhead)",
            lambda g: launch_gap(g.f),
        ),
    ),
}


# Mechanisms whose implying signals were none of them collected: the mechanism can then be neither
# confirmed nor refuted, so the class is not ruled out (its verdict is "not confirmed").
UNOBSERVABLE_WITHOUT: dict[Bottleneck, tuple[tuple[str, tuple[str, ...], str], ...]] = {
    Bottleneck.INTERCONNECT: (("host-to-device copies", ("pcie_rx_frac.mean",), "DCGM_FI_PROF_PCIE_RX_BYTES"),),
    Bottleneck.MEMORY: (
        (
            "GPU memory bandwidth",
            ("dram_active.mean", "mem_copy_util.mean"),
            "DCGM_FI_PROF_DRAM_ACTIVE or DCGM_FI_DEV_MEM_COPY_UTIL",
        ),
    ),
}


@dataclass(frozen=True)
class GateResult:
    """Whether a class's evidence holds, and its best reading.

    ``unobserved`` names a mechanism of the class whose implying signal was not collected (then the
    class is not confirmed, but not ruled out either); ``unread`` one that was not collected but
    cannot be what limits this job, and why.
    """

    holds: bool
    best: str | None  # the best gate's name
    level: float  # its reading over its threshold (>= 1 holds)
    what: str
    unobserved: str | None = None
    unread: str | None = None


def check(cls: Bottleneck, g: GateInput) -> GateResult:
    """The best gate of ``cls`` on this window.

    Args:
        cls: the class.
        g: what the gates read.

    Returns:
        Whether one gate holds, with the best reading (``holds`` is True for Unknown, which needs none).
    """
    best: tuple[float, Gate] | None = None
    for gate in GATES.get(cls, ()):
        lv = gate.level(g)
        if lv is not None and (best is None or lv > best[0]):
            best = (lv, gate)
    if cls is Bottleneck.UNKNOWN:
        return GateResult(True, None, 1.0, "")
    unobserved = _unobserved(cls, g)
    unread = None
    if unobserved is not None and cls is Bottleneck.MEMORY and g.busy is not None and g.busy <= GPUS_WAIT:
        # HBM-bound kernels keep the GPUs busy: GPUs with idle time to explain wait on something else,
        # so unread memory fields keep Memory open only for GPUs busier than GPUS_WAIT
        unobserved, unread = (
            None,
            (
                f"{unobserved}, but HBM-bound kernels would keep the GPUs busy, and they were busy "
                f"{100 * g.busy:.0f} % of the time"
            ),
        )
    if best is None:
        return GateResult(False, None, 0.0, "no signal that implies it was available", unobserved, unread)
    held = best[0] >= 1.0
    return GateResult(held, best[1].name, best[0], best[1].what, None if held else unobserved, unread)


def _unobserved(cls: Bottleneck, g: GateInput) -> str | None:
    """The mechanism of ``cls`` whose implying signals were none of them collected, if any."""
    return next(
        (
            f"{what} cannot be seen without {field}"
            for what, feats, field in UNOBSERVABLE_WITHOUT.get(cls, ())
            if all(g.f(feat) is None for feat in feats)
        ),
        None,
    )


def holding(g: GateInput) -> dict[Bottleneck, GateResult]:
    """The gate result of every class."""
    return {cls: check(cls, g) for cls in GATES}
