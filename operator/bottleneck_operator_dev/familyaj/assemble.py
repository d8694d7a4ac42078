"""One pod's window: its levels scraped by each exporter the cluster runs, read as the data layer reads them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.window import PodWindow, SignalBlock
from bottleneck_operator_dev.familyaj.fleet import Placement
from bottleneck_operator_dev.familyaj.gpu_truth import Texture, gpu_idle_levels, gpu_levels
from bottleneck_operator_dev.familyaj.host_truth import idle_pod_levels, node_levels, pod_levels
from bottleneck_operator_dev.familyaj.label import Account
from bottleneck_operator_dev.familyaj.observe import Observation
from bottleneck_operator_dev.familyaj.scrape import (
    Schedule,
    Timeline,
    counter_samples,
    gauge_samples,
    read_window,
    scrape_times,
)
from bottleneck_operator_dev.familyaj.workload import Workload

FloatArray = npt.NDArray[np.float64]

DEV = ("gpu_util", "mem_copy_util", "power_w", "sm_clock_mhz", "nvlink_total_bps")
PROF = ("gr_engine_active", "tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps")
FULL = ("sm_active", "sm_occupancy", "nvlink_tx_bps", "nvlink_rx_bps", "fp32_active", "fp16_active")
CLOCKS = ("power_limit_w",)
NODE = (
    "node_cpus", "node_cpu_busy_frac", "node_cpu_iowait_frac", "node_cpu_system_frac", "node_disk_read_bps",
    "node_disk_reads_ps", "node_disk_busy_frac", "node_mem_avail_frac", "node_swap_used_frac", "node_majfault_ps",
    "node_net_rx_bps", "node_net_tx_bps",
)  # fmt: skip
PSI = ("node_psi_cpu_some", "node_psi_io_some", "node_psi_io_full", "node_psi_mem_some", "node_psi_mem_full")
SIDECAR = (
    "sc_psi_cpu_some", "sc_psi_io_some", "sc_psi_io_full", "sc_psi_mem_some", "sc_psi_mem_full", "sc_cpu_cores",
    "sc_io_read_bps", "sc_majfault_ps", "sc_swapin_ps", "sc_oom_kills", "sc_procs_running", "sc_procs_iowait",
    "sc_procs_busy",
)  # fmt: skip
# Counters read as a ratio of rates: the denominator's rate (CFS periods per second; CPUs for node modes).
RATIO_COUNTERS = {
    "cpu_throttled_frac",
    "sc_throttled_frac",
    "node_cpu_busy_frac",
    "node_cpu_iowait_frac",
    "node_cpu_system_frac",
}
NOISE = {"ratio": 0.05, "B/s": 0.08, "cores": 0.04, "1/s": 0.12, "W": 0.02, "MHz": 0.004, "B": 0.01}
EXACT = {
    "node_cpus",
    "power_limit_w",
    "cpu_limit_cores",
    "mem_limit_bytes",
    "clock_slowdown_frac",
    "node_swap_used_frac",
}


@dataclass(frozen=True)
class PodLevels:
    """Levels per row (segments, then the checkpoint pause, then loading) of one pod."""

    gpu: dict[str, FloatArray]  # name -> (gpus, rows)
    pod: dict[str, FloatArray]  # name -> (rows,)
    node: dict[str, FloatArray]  # name -> (rows,)


def levels(w: Workload, pl: Placement, acc: Account, pod: int, tex: Texture) -> PodLevels:
    """A pod's levels in each segment and in the pause and loading rows."""
    nb = pl.neighbours[pod]
    gpu_rows, pod_rows, node_rows = [], [], []
    for s, (per_pod, step) in enumerate(zip(acc.stages, acc.steps, strict=True)):
        load = float(pl.seg_load[s])
        gpu_rows.append(gpu_levels(w, pl, per_pod[pod], step, pod, tex))
        pl_row = pod_levels(w, pl, per_pod[pod], step)
        pod_rows.append(pl_row)
        node_rows.append(node_levels(pl, nb, pl_row, w, step, load))
    for startup in (False, True):
        gpu_rows.append(gpu_idle_levels(w, pl, pod, startup))
        idle = idle_pod_levels(w, pl, startup)
        pod_rows.append(idle)
        node_rows.append(node_levels(pl, nb, idle, w, 1e9, float(pl.seg_load.mean())))
    return PodLevels(
        gpu={k: np.stack([r[k] for r in gpu_rows], axis=1) for k in gpu_rows[0]},
        pod={k: np.array([r[k] for r in pod_rows]) for k in pod_rows[0]},
        node={k: np.array([r[k] for r in node_rows]) for k in node_rows[0]},
    )


def _sd(name: str) -> float:
    return 0.0 if name in EXACT else NOISE.get(SIGNALS[name].unit, 0.05)


def _exporter_signals(
    rng: np.random.Generator,
    names: tuple[str, ...],
    table: dict[str, FloatArray],
    sch: Schedule,
    timeline: Timeline,
    origin: float,
    at: FloatArray,
    step: float,
    end: float,
    denominators: dict[str, float],
) -> dict[str, FloatArray]:
    """One exporter's host-side signals of one pod: scraped, counted, read."""
    t = scrape_times(rng, sch, end)
    rows = timeline.rows(t)
    gauges: dict[str, FloatArray] = {}
    counters: dict[str, FloatArray] = {}
    for name in names:
        level = table[name]
        if SIGNALS[name].kind is Kind.COUNTER:
            den = denominators.get(name, 1.0)
            rate = level[None, :] * den
            start = rate[:, 0] * rng.uniform(1e3, 1e6) if sch.reset_at is None else rate[:, 0] * rng.uniform(1e2, 1e4)
            counters[name] = counter_samples(
                rng, rate, t, timeline, _sd(name), start, sch.reset_at, integer=name == "sc_oom_kills"
            )[0]
        else:
            g = gauge_samples(rng, level, rows, _sd(name))
            if SIGNALS[name].unit == "procs":
                g = np.round(g + rng.normal(0.0, 0.3, g.shape)).clip(0.0)
            gauges[name] = g
    out = read_window(t + origin, at, step, sch.interval, gauges, counters)
    for name, den in denominators.items():
        if name in out:
            out[name] = np.clip(out[name] / den, 0.0, 1.0)
    return out


def _clip_ratios(values: dict[str, FloatArray]) -> dict[str, FloatArray]:
    for name, v in values.items():
        if SIGNALS[name].unit == "ratio":
            values[name] = np.clip(v, 0.0, 1.0)
    return values


def gpu_signals(
    rng: np.random.Generator,
    lv: PodLevels,
    obs: Observation,
    sch: Schedule,
    timeline: Timeline,
    origin: float,
    at: FloatArray,
    step: float,
    end: float,
    xid: tuple[float, float],
) -> dict[str, FloatArray]:
    """The pod's dcgm-exporter signals: per-GPU series, sampled, then combined as the contract says."""
    names = DEV + (PROF if obs.field_set != "dev" else ()) + (FULL if obs.field_set == "full" else ())
    t = scrape_times(rng, sch, end)
    collected = np.floor((t - sch.offset) / sch.collect).astype(np.int64)
    rows = timeline.rows(collected.astype(np.float64) * sch.collect + sch.offset)
    gauges = {n: np.clip(gauge_samples(rng, lv.gpu[n], rows, _sd(n), collected), 0.0, None) for n in names}
    gauges["fb_used_mib"] = gauge_samples(rng, lv.gpu["fb_used_mib"], rows, 0.002, collected)
    total = (lv.gpu["fb_used_mib"][:, 0] + lv.gpu["fb_free_mib"][:, 0])[:, None]
    gauges["fb_total_mib"] = np.broadcast_to(total, gauges["fb_used_mib"].shape).copy()
    if obs.power_clocks:
        gauges["power_limit_w"] = gauge_samples(rng, lv.gpu["power_limit_w"], rows, 0.0)
        gauges["clock_slowdown_frac"] = gauge_samples(rng, lv.gpu["clock_slowdown_frac"], rows, 0.0)
    gauges["xid_code"] = np.where(t >= xid[0], xid[1], 0.0)[None, :]
    read = read_window(t + origin, at, step, sch.interval, gauges, {})
    out = {n: np.mean(read[n], axis=0) for n in names if n in read}
    used, total = read.pop("fb_used_mib"), read.pop("fb_total_mib")
    out["fb_used_frac"] = np.max(used / total, axis=0)
    if obs.power_clocks:
        out["power_limit_w"] = np.mean(read["power_limit_w"], axis=0)
        out["clock_slowdown_frac"] = np.mean(read["clock_slowdown_frac"], axis=0)
    out["xid_code"] = np.max(np.atleast_2d(read["xid_code"]), axis=0)
    return _clip_ratios(out)


def pod_window(
    rng: np.random.Generator,
    w: Workload,
    pl: Placement,
    pod: int,
    lv: PodLevels,
    obs: Observation,
    timeline: Timeline,
    origin: float,
    at: FloatArray,
    step: float,
    names: tuple[str, str],
    xid: tuple[float, float],
) -> PodWindow:
    """One pod's PodWindow."""
    end = float(at[-1] - origin) + 1.0
    sch = {e: obs.schedules[e][pod] for e in obs.schedules}
    sig = gpu_signals(rng, lv, obs, sch["dcgm"], timeline, origin, at, step, end, xid)
    cad: tuple[str, ...] = ("cpu_cores", "mem_working_set_bytes", "fs_read_bps")
    limited = w.cpu_limit is not None
    if limited:
        cad += ("cpu_throttled_frac",)
    if w.mem_limit_gib is not None and (obs.spec_memory or obs.ksm or obs.sidecar):
        cad += ("mem_limit_bytes",)
    args = (timeline, origin, at, step, end)
    sig.update(_exporter_signals(rng, cad, lv.pod, sch["cadvisor"], *args, {"cpu_throttled_frac": 10.0}))
    if obs.ksm and limited:
        sig.update(_exporter_signals(rng, ("cpu_limit_cores",), lv.pod, sch["ksm"], *args, {}))
    node = NODE + (PSI if obs.node_psi else ()) + (("ib_rx_bps", "ib_tx_bps") if obs.node_ib else ())
    cpus = float(pl.kind.cpus)
    dens = {"node_cpu_busy_frac": cpus, "node_cpu_iowait_frac": cpus, "node_cpu_system_frac": cpus}
    sig.update(_exporter_signals(rng, node, lv.node, sch["node"], *args, dens))
    if obs.sidecar:
        sc = (
            SIDECAR
            + (("sc_throttled_frac",) if limited else ())
            + (("sc_net_rx_bps", "sc_net_tx_bps") if obs.sidecar_net else ())
        )
        sig.update(_exporter_signals(rng, sc, lv.pod, sch["sidecar"], *args, {"sc_throttled_frac": 10.0}))
    sig = _clip_ratios(sig)
    ordered = [n for n in SIGNALS if n in sig]
    block = SignalBlock(ordered, np.stack([np.asarray(sig[n], dtype=np.float64) for n in ordered]))
    return PodWindow(
        pod=names[0],
        node=names[1],
        gpu_model=pl.gpu.model_name,
        gpu_count=pl.gpus_per_pod,
        signals=block,
        co_located_pods=pl.neighbours[pod].pods,
    )
