"""Derived per-pod series: signals turned into quantities that mean the same on any cluster.

Fractions of a known capacity (PCIe and NVLink against the GPU's datasheet link, CPU against the
pod's limit and the node's cores, memory against the limit), pressure-stall shares, ratios between
signals (network vs disk reads, receive vs transmit symmetry, ``GPU_UTIL`` minus SM/graphics-engine
activity — the gap that NCCL and tiny kernels open, TELEMETRY.md "Reading the profiling metrics") and
a few rates on a log scale (their names and meanings: :mod:`.series_names`). :mod:`.features`
summarises each series over time.

Each numpy pass over the planes costs a trip to memory: results are made in place (``out=``) where a
temporary would cost one more, and numpy's slow paths give way to exact equivalents (:func:`floor`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.features.elementwise import (
    clipped,
    coalesce,
    div,
    floor,
    log_rate,
    nan_sum,
    nan_to_num,
    per,
    rel_peak,
)
from bottleneck_operator.analysis.features.hardware import PodCapacities
from bottleneck_operator.analysis.features.implausible import drop_dcgm_repeats, drop_impossible_shares, util_in_phase
from bottleneck_operator.analysis.features.levels import DRAM_PEAK, WAITED_ON
from bottleneck_operator.analysis.features.series_names import BANDED, SERIES, SERIES_INDEX
from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.window import FloatArray

_RAW = {name: i for i, name in enumerate(SIGNAL_NAMES)}


def _raw(r: FloatArray, name: str) -> FloatArray:
    return r[:, _RAW[name], :]


def derived_series(raw: FloatArray, caps: PodCapacities) -> FloatArray:
    """Derived series for every pod.

    Args:
        raw: the pods' signals, shape (pods, len(SIGNAL_NAMES), T).
        caps: each pod's GPU count and capacities (:func:`~.gather.gather`).

    Returns:
        Shape (pods, len(SERIES), T), a view of a series-major array: ``d[:, k, :]`` is contiguous, as
        the signals' planes are in :func:`~.gather.gather`'s array.
    """
    p, _, t = raw.shape
    d = np.empty((len(SERIES), p, t)).transpose(1, 0, 2)
    cols = derived_columns(raw, caps)
    for name, index in SERIES_INDEX.items():
        d[:, index, :] = cols.get(name, np.nan)
    return d


def derived_columns(raw: FloatArray, caps: PodCapacities, *, scratch: bool = False) -> dict[str, FloatArray]:
    """The derived series of every pod as separate (pods x time) planes, name -> plane.

    What :func:`derived_series` stacks; feature extraction summarises the planes one by one instead,
    without the (pods x series x time) copy. A plane may be a view of ``raw`` (a signal taken as it
    is); with ``scratch``, ``raw`` belongs to the caller's pipeline and implausible samples are
    blanked in it rather than in a copy. A series missing from the mapping is NaN throughout.
    """
    raw = drop_dcgm_repeats(drop_impossible_shares(raw, in_place=scratch), in_place=scratch)

    def g(name: str) -> FloatArray:
        return _raw(raw, name)

    cols = _gpu_columns(g, caps)
    reads = _reads(g)
    cols.update(_host_columns(g, caps.gpus, reads))
    cols["pcie_per_act"] = per(cols["pcie_rx_frac"], cols["act"], 0.05)
    cols.update(_transfer_columns(g, cols, reads, caps.pcie))
    for name in BANDED:
        cols[f"{name}_band"] = _band(cols[name])
    return cols


def _gpu_columns(g: Callable[[str], FloatArray], caps: PodCapacities) -> dict[str, FloatArray]:
    """GPU activity, pipes, memory, links, power and clock."""
    pcie, nvlink = caps.pcie, caps.nvlink
    gr, sm = g("gr_engine_active"), g("sm_active")
    tensor, dram = g("tensor_active"), g("dram_active")
    pcie_rx, pcie_tx = g("pcie_rx_bps"), g("pcie_tx_bps")
    rx_frac, tx_frac = div(pcie_rx, pcie), div(pcie_tx, pcie)
    # GPU_UTIL counts the copy engines' time beside the kernels': one-way copies streaming at the
    # link's rate read 0.99 with the SMs idle (tests/data/gpu-h2d-pinned). What is left is kernels.
    copying = nan_to_num(copy_engine_share(rx_frac, tx_frac))
    gpu_util = util_in_phase(g("gpu_util"), gr, copying)
    kernels = clipped(np.subtract(gpu_util, copying, out=copying), 0.0, 1.0)
    act = coalesce(gr, sm, kernels)
    cols: dict[str, FloatArray] = {
        "act": act,
        "kernel_time": coalesce(gr, kernels),
        "gpu_util": gpu_util,
        "gr_engine_active": gr,
        "sm_active": sm,
        "sm_occupancy": g("sm_occupancy"),
        "tensor_active": tensor,
        "dram_active": dram,
        "mem_copy_util": g("mem_copy_util"),
        "util_gap": kernels - coalesce(sm, gr),
        "tensor_per_act": per(tensor, act, 0.02),
        "dram_minus_tensor": dram - tensor,
        "hbm_busy": clipped(dram / DRAM_PEAK, 0.0, 1.0),
        "util_gr_gap": gpu_util - gr,
        "sm_fill": clipped(per(sm, gr, 0.05), 0.0, 1.5),
        "pcie_rx_frac": rx_frac,
        "pcie_tx_frac": tx_frac,
        # a balance of no traffic is undefined (0/0 is NaN), not the one-way 0 of a reader
        "pcie_symmetry": div(np.fmin(pcie_rx, pcie_tx), np.fmax(pcie_rx, pcie_tx)),
    }
    nv_bytes = coalesce(nan_sum(g("nvlink_tx_bps"), g("nvlink_rx_bps")), g("nvlink_total_bps"), inplace=True)
    cols["nvlink_frac"] = div(nv_bytes, np.where(nvlink > 0, nvlink, np.nan), out=nv_bytes)
    cols["pcie_rel_peak"] = rel_peak(g("pcie_rx_bps"))
    cols["power_rel_peak"] = rel_peak(g("power_w"))
    limit = coalesce(g("power_limit_w"), np.broadcast_to(caps.tdp, act.shape))
    cols["power_limit_frac"] = div(g("power_w"), limit)
    # the clock says something of the work only while there is work: an idle GPU holds its maximum
    # with a CUDA context open (tests/data/gpu-io) and drops far below it without one
    clock = g("sm_clock_mhz").copy()
    np.copyto(clock, np.nan, where=~(act >= CLOCK_BUSY))
    cols["sm_clock_mhz"] = clock
    cols["clock_rel_peak"] = rel_peak(clock)
    cols["clock_slowdown"] = g("clock_slowdown_frac")
    cols["fp32_active"] = g("fp32_active")
    cols["fp16_active"] = g("fp16_active")
    return cols


def _reads(g: Callable[[str], FloatArray]) -> FloatArray:
    """Bytes/s the job reads from storage: the busiest of the node's disks, its filesystem and its cgroup."""
    return np.fmax(np.fmax(g("node_disk_read_bps"), g("fs_read_bps")), g("sc_io_read_bps"))


def _host_columns(g: Callable[[str], FloatArray], gpus: FloatArray, reads: FloatArray) -> dict[str, FloatArray]:
    """CPU, memory, pressure, network and storage of the pod and its node."""
    cols: dict[str, FloatArray] = {}
    cpu, limit, node_cpus = g("cpu_cores"), g("cpu_limit_cores"), g("node_cpus")
    cols["cpu_per_gpu"] = div(cpu, np.maximum(gpus, 1.0))
    cols["cpu_limit_frac"] = div(cpu, limit)
    node_frac = div(cpu, node_cpus)
    cols["cpu_node_frac"] = node_frac
    busy = g("node_cpu_busy_frac")
    cols["job_share_node_cpu"] = clipped(per(node_frac, busy, 0.01), 0.0, 1.5)
    cols["cpu_throttled_frac"] = g("cpu_throttled_frac")
    cols["mem_limit_frac"] = div(g("mem_working_set_bytes"), g("mem_limit_bytes"))
    for name in ("node_cpu_busy_frac", "node_cpu_iowait_frac", "node_cpu_system_frac", "node_disk_busy_frac"):
        cols[name] = g(name)
    cols["node_mem_used_frac"] = 1.0 - g("node_mem_avail_frac")
    cols["node_swap_used_frac"] = g("node_swap_used_frac")
    cols["log_majfault"] = log_rate(g("node_majfault_ps"))
    for name in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full"):
        cols[f"node_psi_{name}"] = g(f"node_psi_{name}")
        cols[f"sc_psi_{name}"] = g(f"sc_psi_{name}")
    rx, tx = g("node_net_rx_bps"), g("node_net_tx_bps")
    into = nan_sum(rx, reads) + 1.0
    cols["net_rx_share"] = div(rx, into, out=into)
    # NaN where nothing crossed: a quiet host is not a one-way reader of network storage
    cols["net_symmetry"] = div(np.fmin(rx, tx), np.fmax(rx, tx))
    per_gpu = np.maximum(gpus, 1.0)
    cols["log_net_per_gpu"] = log_rate(nan_sum(rx, tx), per_gpu)
    cols["log_read_per_gpu"] = log_rate(reads, per_gpu)
    cols["log_ib_per_gpu"] = log_rate(nan_sum(g("ib_rx_bps"), g("ib_tx_bps")), per_gpu)
    cols["sc_log_swapin"] = log_rate(g("sc_swapin_ps"))
    cols["sc_oom_kills"] = g("sc_oom_kills")
    cols["read_rel_peak"] = rel_peak(reads)
    cols["net_rel_peak"] = rel_peak(rx)
    cols["sc_cpu_limit_frac"] = div(g("sc_cpu_cores"), limit)
    cols["sc_throttled_frac"] = g("sc_throttled_frac")
    cols["sc_log_majfault"] = log_rate(g("sc_majfault_ps"))
    running, waiting = g("sc_procs_running"), g("sc_procs_iowait")
    cols["sc_iowait_procs_share"] = div(waiting, running + waiting)
    cols["iowait_of_idle"] = clipped(per(g("node_cpu_iowait_frac"), 1.0 - busy, 0.02), 0.0, 1.0)
    return cols


# the GPU's busy share from which its clock is read (clock_rel_peak)
CLOCK_BUSY = 0.5
# the link share at which a copy engine streams without a pause: 58 GB/s of PCIe Gen5 x16's 64 on an
# H200 (tests/data/gpu-h2d-pinned)
COPY_ENGINE_RATE = 0.9
# tensor-pipe or HBM use per unit of kernel time below which a GPU's kernels are small: a 256- or
# 512-wide MLP's read 0.0 on an H200 (tests/data/gpu-launch, gpu-launch-wide); compute kernels keep
# one pipe or the other busy, or fill the SMs (FP32 units: kernel_time.sms_filled)
LAUNCH_PIPES = 0.2
# bytes/s of a copy from pageable memory, which the driver stages through a pinned buffer with one
# CPU memcpy whatever the link: 9.47 GB/s on an H200's Gen5 link, 0.15 of it (tests/data/gpu-h2d)
STAGED_COPY_BPS = 10e9


def _transfer_columns(
    g: Callable[[str], FloatArray], cols: dict[str, FloatArray], reads: FloatArray, link: FloatArray
) -> dict[str, FloatArray]:
    """Class-level quantities that hold whatever mechanism or hardware produced them."""
    out: dict[str, FloatArray] = {}
    pipes = np.fmax(g("tensor_active"), g("dram_active") / DRAM_PEAK)
    pipes = coalesce(np.fmax(pipes, g("sm_active"), out=pipes), cols["act"], inplace=True)
    out["gpu_any_pipe"] = clipped(pipes, 0.0, 1.0)
    out["pcie_fabric_frac"] = np.fmin(cols["pcie_rx_frac"], cols["pcie_tx_frac"])
    idle = np.subtract(1.0, np.clip(cols["act"], 0.0, 1.0))
    out["link_busy"] = _link_busy(cols, out["pcie_fabric_frac"], idle, link)
    out.update(_kernel_gaps(g, cols, out["pcie_fabric_frac"]))
    out.update(_cpu_columns(g))
    out["input_rel_peak"] = rel_peak(nan_sum(g("node_net_rx_bps"), reads))
    out["power_per_act"] = clipped(per(cols["power_rel_peak"], cols["act"], 0.05), 0.0, 5.0)
    faults = np.fmax(cols["log_majfault"], cols["sc_log_majfault"])
    system = nan_to_num(g("node_cpu_system_frac")) * 10.0
    out["fault_sys"] = np.multiply(faults, clipped(system, 0.0, 1.0), out=system)
    np.copyto(out["fault_sys"], np.nan, where=np.isnan(faults))
    out.update(_stall_columns(g, out, idle))
    return out


def _link_busy(cols: dict[str, FloatArray], fabric: FloatArray, idle_gpu: FloatArray, link: FloatArray) -> FloatArray:
    """How far the links bound the step: the busiest of one-way copies, NVLink and balanced PCIe."""
    # A link bounds the step when the GPU waits for it. One-way PCIe bytes are input copies, which every
    # class makes: they count as far as the GPU idles (the copies' share times the idle share, with no
    # knee of ours between them: where that product starts to matter is the classifier's to learn).
    # NVLink and the PCIe bytes crossing both ways (min(rx, tx): peers, GPUDirect RDMA) carry
    # collectives, whose NCCL kernels keep the GPU busy while they wait: they count in full.
    # A copy runs as fast as its slower leg: DMA near the link's rate from pinned memory, the staging
    # memcpy from pageable memory. Against the slower of the two a copy-bound GPU's copies read busy
    # whichever memory they come from, on any PCIe generation.
    path = np.minimum(div(np.full_like(link, STAGED_COPY_BPS), link), COPY_ENGINE_RATE)  # as a share of the link
    copies = clipped(div(np.fmax(cols["pcie_rx_frac"], cols["pcie_tx_frac"]), path), 0.0, 1.0)
    busy = np.multiply(copies, idle_gpu)
    np.fmax(busy, cols["nvlink_frac"], out=busy)
    return np.fmax(busy, fabric, out=busy)


def _cpu_columns(g: Callable[[str], FloatArray]) -> dict[str, FloatArray]:
    """The cgroup's use of the cores it may use, per running process and per busy process."""
    out: dict[str, FloatArray] = {}
    limit, node_cpus, running = g("cpu_limit_cores"), g("node_cpus"), g("sc_procs_running")
    own = coalesce(g("sc_cpu_cores"), g("cpu_cores"))
    # node cores the neighbours leave to the job; at least one: a saturated node still time-slices
    usable = np.fmax(node_cpus * (1.0 - g("node_cpu_busy_frac")), 1.0)
    usable += own
    usable = np.fmin(limit, usable, out=usable)
    out["cpu_own_sat"] = clipped(div(own, usable), 0.0, 1.5)
    out["cpu_per_running"] = clipped(per(own, running, 1.0), 0.0, 2.0)
    usable = coalesce(usable, node_cpus, inplace=True)
    out["sc_runnable_per_core"] = clipped(div(running, usable, out=usable), 0.0, 4.0)
    out["busy_core_share"] = clipped(per(g("sc_procs_busy"), own, 1.0), 0.0, 1.5)
    return out


def _stall_columns(
    g: Callable[[str], FloatArray], cpu: dict[str, FloatArray], idle: FloatArray
) -> dict[str, FloatArray]:
    """IO, CPU and memory pressure while the GPU idles, and each one's share of the stalls."""
    stalls: dict[str, FloatArray] = {}
    io = _band(coalesce(g("sc_psi_io_some"), g("node_psi_io_some")), inplace=True)
    stalls["io_stall_idle"] = np.multiply(io, idle, out=io)
    # how near its limit: the share of the cores it may use, or of a core per running process (a
    # single-threaded loader is at its limit on an idle node); its pressure counts as far as it is
    near_limit = np.fmax(nan_to_num(cpu["cpu_own_sat"]), nan_to_num(cpu["cpu_per_running"]))
    near_limit = clipped(near_limit, 0.0, 1.0)
    throttled = _band(coalesce(g("sc_throttled_frac"), g("cpu_throttled_frac")), inplace=True)
    own_psi = _band(g("sc_psi_cpu_some"))
    stalls["cpu_psi_own"] = np.fmax(np.multiply(own_psi, near_limit, out=own_psi), throttled, out=own_psi)
    stalls["cpu_stall_idle"] = own_psi * idle
    mem = _band(coalesce(g("sc_psi_mem_some"), g("node_psi_mem_some")), inplace=True)
    stalls["mem_stall_idle"] = np.multiply(mem, idle, out=mem)
    # sum() of the NaN-as-0 stalls to the bit once the floor is added (sum()'s leading 0 signs a zero)
    total = nan_to_num(stalls["io_stall_idle"])
    total += nan_to_num(stalls["cpu_stall_idle"])
    total += nan_to_num(stalls["mem_stall_idle"])
    total += WAITED_ON
    for k in ("io_stall_idle", "cpu_stall_idle", "mem_stall_idle"):
        stalls[k.replace("_idle", "_share")] = stalls[k] / total
    return stalls


def _kernel_gaps(
    g: Callable[[str], FloatArray], cols: dict[str, FloatArray], fabric: FloatArray
) -> dict[str, FloatArray]:
    """Time in small kernels with the links quiet (``launch_gap``), and NCCL kernels waiting on busy links."""
    # only collective bytes (NVLink, or PCIe crossed both ways) tell NCCL kernels from launch gaps:
    # input copies cross PCIe one way in every class. A link carrying under XProf's 5 % carries no
    # collectives to speak of (NaN counts as 0, which is below it). Network traffic has no capacity in
    # the contract to hold it against: its balance and volume stay features of their own, and how they
    # bear on these two is the classifier's to learn.
    collective = np.fmax(cols["nvlink_frac"], fabric) > WAITED_ON
    # time in small kernels: kernels running that use neither the tensor pipes nor HBM. With the links
    # quiet the GPU idles between them while the host launches the next (NCCL kernels read the same,
    # with bytes on a link)
    small = small_kernel_share(cols["kernel_time"], np.fmax(g("tensor_active"), cols["hbm_busy"]))
    # 0 where a link carries collectives (missing where the share is)
    np.copyto(small, 0.0, where=collective & ~np.isnan(small))
    gap = np.clip(cols["util_gap"], 0.0, 1.0)
    np.copyto(gap, 0.0, where=~collective & ~np.isnan(gap))
    return {"launch_gap": small, "collective_gap": gap}


def copy_engine_share(rx_frac: npt.ArrayLike, tx_frac: npt.ArrayLike) -> FloatArray:
    """The share of time the copy engines move bytes: one-way PCIe bytes at COPY_ENGINE_RATE of the link.

    Per sample here, over a window's means in the evidence gates; ``GPU_UTIL`` counts this time beside
    the kernels' (tests/data/gpu-h2d-pinned).
    """
    one_way = np.abs(np.subtract(rx_frac, tx_frac))
    return np.asarray(np.clip(one_way / COPY_ENGINE_RATE, 0.0, 1.0), dtype=np.float64)


def small_kernel_share(kernel_time: npt.ArrayLike, pipes: npt.ArrayLike) -> FloatArray:
    """Time in kernels that keep neither the tensor pipes nor HBM busy (``pipes``: the busier of the two).

    The kernels' time, scaled down by how busy the pipes are per unit of it (none left from LAUNCH_PIPES).
    Per sample here (``launch_gap``), over a window's means in the evidence gates and the mechanism.
    """
    kt = np.asarray(kernel_time, dtype=np.float64)
    per_kernel_time = np.divide(pipes, floor(kt, 0.05))
    return np.asarray(kt * np.clip(1.0 - per_kernel_time / LAUNCH_PIPES, 0.0, 1.0), dtype=np.float64)


def _band(x: FloatArray, *, inplace: bool = False) -> FloatArray:
    """A stall share with its background below WAITED_ON removed (in ``x`` itself with ``inplace``)."""
    # x - WAITED_ON is never -0.0: the clip is np.maximum(..., 0.0) to the bit (see floor)
    out = clipped(np.subtract(x, WAITED_ON, out=x if inplace else None), 0.0, np.inf)
    out /= 1.0 - WAITED_ON
    return out
