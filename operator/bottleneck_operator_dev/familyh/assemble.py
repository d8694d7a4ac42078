"""One pod's window: every present exporter scraped, its counters rated and its gauges read.

Only signals of the contract's table are emitted, and only for families the cluster publishes and
the pod's set-up gives a series to (no CPU limit: no CFS counters and no limit series).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.window import PodWindow, SignalBlock
from bottleneck_operator_dev.familyh.cluster import Accidents, Cluster
from bottleneck_operator_dev.familyh.draft import Draft
from bottleneck_operator_dev.familyh.scrape import (
    IB_LEGACY_MAX,
    Scrapes,
    at_times,
    counters,
    held,
    make_scrapes,
    scrape_times,
)

Rng = np.random.Generator
Array = npt.NDArray[np.float64]

DEV = ("gpu_util", "mem_copy_util", "fb_used_frac", "power_w", "sm_clock_mhz", "nvlink_total_bps", "xid_code")
PROF = ("gr_engine_active", "tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps")
GPU_FAMILIES: dict[Family, tuple[str, ...]] = {
    Family.DCGM_DEV: DEV,
    Family.DCGM_PROF: PROF,
    Family.DCGM_PROF_SM: ("sm_active", "sm_occupancy"),
    Family.DCGM_PROF_NVLINK: ("nvlink_tx_bps", "nvlink_rx_bps"),
    Family.DCGM_PROF_PIPES: ("fp32_active", "fp16_active"),
    Family.DCGM_POWER_CLOCKS: ("power_limit_w", "clock_slowdown_frac"),
}
NODE_COUNTERS = (
    "node_disk_read_bps",
    "node_disk_reads_ps",
    "node_disk_busy_frac",
    "node_majfault_ps",
    "node_net_rx_bps",
    "node_net_tx_bps",
)
NODE_PSI = ("node_psi_cpu_some", "node_psi_io_some", "node_psi_io_full", "node_psi_mem_some", "node_psi_mem_full")
SC_PSI = ("sc_psi_cpu_some", "sc_psi_io_some", "sc_psi_io_full", "sc_psi_mem_some", "sc_psi_mem_full")
SC_COUNTERS = ("sc_cpu_cores", "sc_io_read_bps", "sc_majfault_ps", "sc_swapin_ps", "sc_oom_kills")
SC_NET = ("sc_net_rx_bps", "sc_net_tx_bps")


@dataclass(frozen=True)
class Sources:
    """Everything one job's exporters hold, on the fine grid.

    Attributes:
        grid: the fine time grid (T,).
        at: the window's timestamps.
        gpu: per-GPU dcgm fields (pods, gpus, T).
        rates, gauges: per-pod host and node quantities (pods, T); counters' rates and gauges.
    """

    grid: Array
    at: Array
    gpu: dict[str, Array]
    rates: dict[str, Array]
    gauges: dict[str, Array]


def _scrapes(rng: Rng, src: Sources, cl: Cluster, acc: Accidents, exporter: str, p: int, step: float) -> Scrapes:
    gaps: list[tuple[float, float]] = []
    start = float(src.at[0])
    if acc.exporter_gap is not None and acc.exporter_gap[0] == exporter and acc.exporter_gap[1] == p:
        gaps.append((start + acc.exporter_gap[2], acc.exporter_gap[3]))
    if acc.container_restart is not None and acc.container_restart[0] == p and exporter in ("dcgm", "cadvisor"):
        gaps.append((start + acc.container_restart[1], acc.container_restart[2]))
    times = scrape_times(rng, float(src.grid[0]), float(src.grid[-1]), cl.scrape_s, acc.missed_scrape_p, tuple(gaps))
    return make_scrapes(times, src.at, step, cl.scrape_s, cl.prometheus_major)


def _gpu(rng: Rng, d: Draft, cl: Cluster, src: Sources, sc: Scrapes, p: int) -> dict[str, Array]:
    names = [n for fam, ns in GPU_FAMILIES.items() if fam in cl.families for n in ns]
    if d.board.model_name.startswith("Tesla T4"):
        # T4 publishes only part of the profiling group
        names = [n for n in names if n in DEV or n in ("gr_engine_active", "pcie_tx_bps", "pcie_rx_bps")]
    if d.board.nvlink_bps == 0:
        names = [n for n in names if n not in ("nvlink_tx_bps", "nvlink_rx_bps")]
    rows = []
    for name in names:
        per_gpu = src.gpu[name][p]
        how = "max" if name in ("fb_used_frac", "xid_code") else "mean"
        rows.append(per_gpu.max(axis=0) if how == "max" else per_gpu.mean(axis=0))
    phase = float(rng.uniform(0.0, cl.dcgm_collect_s))
    values = held(src.grid, np.stack(rows), sc.times, cl.dcgm_collect_s, phase)
    out = sc.sampler.last(values)
    return dict(zip(names, out, strict=True))


def _counter_block(
    rng: Rng,
    src: Sources,
    sc: Scrapes,
    names: tuple[str, ...],
    p: int,
    resets: tuple[float, ...] = (),
    ceiling: float | None = None,
) -> dict[str, Array]:
    raw = counters(src.grid, np.stack([src.rates[n][p] for n in names]), sc.times, rng, resets, ceiling)
    return dict(zip(names, sc.sampler.rate(raw), strict=True))


def _gauge_block(src: Sources, sc: Scrapes, names: tuple[str, ...], p: int) -> dict[str, Array]:
    values = at_times(src.grid, np.stack([src.gauges[n][p] for n in names]), sc.times)
    return dict(zip(names, sc.sampler.last(values), strict=True))


def _ratio(num: Array, den: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.clip(num / den, 0.0, 1.0), np.nan)


def _host(
    rng: Rng, d: Draft, cl: Cluster, acc: Accidents, src: Sources, p: int, step: float, net_rng: Rng
) -> dict[str, Array]:
    out: dict[str, Array] = {}
    fams, start = cl.families, float(src.at[0])
    restart: tuple[float, ...] = ()
    if acc.container_restart is not None and acc.container_restart[0] == p:
        restart = (start + acc.container_restart[1] + acc.container_restart[2],)
    if Family.CADVISOR in fams:
        sc = _scrapes(rng, src, cl, acc, "cadvisor", p, step)
        cfs = Family.CADVISOR_CFS in fams and d.cpu_limit is not None
        names = ("cpu_cores", "fs_read_bps") + (("cfs_throttled", "cfs_periods") if cfs else ())
        got = _counter_block(rng, src, sc, names, p, restart)
        if cfs:
            got["cpu_throttled_frac"] = _ratio(got.pop("cfs_throttled"), got.pop("cfs_periods"))
        out.update(got)
        out.update(_gauge_block(src, sc, ("mem_working_set_bytes",), p))
        if d.mem_limit is not None:
            out["mem_limit_bytes"] = sc.sampler.last(np.full(sc.times.size, d.mem_limit))
    if Family.KSM in fams and d.cpu_limit is not None:
        sc = _scrapes(rng, src, cl, acc, "ksm", p, step)
        out["cpu_limit_cores"] = sc.sampler.last(np.full(sc.times.size, d.cpu_limit))
    if Family.NODE in fams:
        out.update(_node(rng, d, cl, acc, src, p, step))
    if Family.SIDECAR in fams:
        sc = _scrapes(rng, src, cl, acc, "sidecar", p, step)
        limited = d.cpu_limit is not None
        names = SC_COUNTERS + (SC_PSI if cl.kernel_psi else ()) + (("cfs_throttled", "cfs_periods") if limited else ())
        got = _counter_block(rng, src, sc, names, p)
        if limited:
            got["sc_throttled_frac"] = _ratio(got.pop("cfs_throttled"), got.pop("cfs_periods"))
        out.update(got)
        out.update(_gauge_block(src, sc, ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy"), p))
        # the pod's own network bytes: the same sidecar and scrapes; their counters' earlier totals
        # come from ``net_rng`` so that no other signal's draws move
        out.update(_counter_block(net_rng, src, sc, SC_NET, p))
    return out


def _node(rng: Rng, d: Draft, cl: Cluster, acc: Accidents, src: Sources, p: int, step: float) -> dict[str, Array]:
    sc = _scrapes(rng, src, cl, acc, "node", p, step)
    psi = NODE_PSI if Family.NODE_PSI in cl.families else ()
    modes = _counter_block(
        rng, src, sc, ("mode_idle", "mode_iowait", "mode_system", "mode_user", *NODE_COUNTERS, *psi), p
    )
    total = modes["mode_idle"] + modes["mode_iowait"] + modes["mode_system"] + modes["mode_user"]
    out = {
        "node_cpu_busy_frac": np.clip(1.0 - _ratio(modes["mode_idle"] + modes["mode_iowait"], total), 0.0, 1.0),
        "node_cpu_iowait_frac": _ratio(modes["mode_iowait"], total),
        "node_cpu_system_frac": _ratio(modes["mode_system"], total),
    }
    out.update({k: modes[k] for k in NODE_COUNTERS})
    out["node_disk_busy_frac"] = np.clip(out["node_disk_busy_frac"], 0.0, 1.0)
    out.update(_gauge_block(src, sc, ("node_cpus", "node_mem_avail_frac", "node_swap_used_frac"), p))
    out.update({k: np.clip(modes[k], 0.0, 1.0) for k in psi})
    if Family.NODE_IB in cl.families:
        resets = (float(src.at[0]) + acc.ib_reset_at,) if acc.ib_reset_at is not None and p == 0 else ()
        ceiling = IB_LEGACY_MAX if acc.ib_saturating else None
        out.update(_counter_block(rng, src, sc, ("ib_rx_bps", "ib_tx_bps"), p, resets, ceiling))
    return out


def pod_window(
    rng: Rng,
    d: Draft,
    cl: Cluster,
    acc: Accidents,
    src: Sources,
    p: int,
    names: tuple[str, str],
    step: float,
    net_rng: Rng,
) -> PodWindow:
    """One pod's :class:`PodWindow` (``names``: the pod's and its node's; ``net_rng``: the pod network counters' draws)."""
    signals: dict[str, Array] = {}
    has_dcgm = Family.DCGM_DEV in cl.families
    if has_dcgm:
        signals.update(_gpu(rng, d, cl, src, _scrapes(rng, src, cl, acc, "dcgm", p, step), p))
    signals.update(_host(rng, d, cl, acc, src, p, step, net_rng))
    # rate() extrapolates to the range's edges, which can carry a seconds-per-second counter a little
    # past 1; a share of time cannot exceed it
    for name, values in signals.items():
        if SIGNALS[name].unit == "ratio":
            signals[name] = np.minimum(values, 1.0)
    return PodWindow(
        pod=names[0],
        node=names[1],
        gpu_model=d.board.model_name if has_dcgm else None,
        gpu_count=d.gpus if has_dcgm else 0,
        signals=SignalBlock.of(signals, length=src.at.size),
        co_located_pods=acc.neighbours,
    )
