"""What the exporters make of a trajectory: true per-tick quantities, sampled the way collectors sample.

- dcgm-exporter reads DCGM's fields once per collection interval: utilisation fields are averages
  over NVML's ~1 s sample period before the collection, profiling fields averages over the whole
  collection interval; Prometheus then scrapes the last collected value at its own interval, so a
  scrape may repeat a value and a stall shorter than the averaging disappears in it.
- counters (cAdvisor, node-exporter, the collector) integrate what flowed; an exporter restart
  starts them again from zero;
- gauges are read at the scrape instant;
- every series reaches the window as the data layer's PromQL would give it, through the contract's
  :class:`~bottleneck_operator.contract.sampling.Sampler`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.familyw.model import RES, FloatArray, JobPlan

_SHORTS = {"dcgm": Family.DCGM_DEV, "cadvisor": Family.CADVISOR, "node": Family.NODE, "sidecar": Family.SIDECAR}


@dataclass(frozen=True)
class Cluster:
    """How the Job's cluster collects: scrape intervals, DCGM settings, which families exist."""

    scrape: dict[str, float]  # exporter short name -> scrape interval, s
    collect: float  # dcgm-exporter collection interval, s
    families: frozenset[Family]
    miss: float  # share of scrapes lost
    resets: frozenset[str]  # exporters restarted inside the window


def draw_cluster(rng: np.random.Generator, p: JobPlan) -> Cluster:
    """Scrape intervals 10-60 s, DEV-only to full DCGM field sets, optional families."""
    base = float(rng.choice([10.0, 15.0, 15.0, 30.0, 30.0, 60.0]))
    scrape = {k: base for k in ("dcgm", "cadvisor", "node", "sidecar", "ksm")}
    if rng.random() < 0.3:
        scrape["dcgm"] = float(rng.choice([15.0, 30.0]))
    collect = float(rng.choice([1.0, 5.0, 10.0, 30.0, 30.0]))
    fams = {Family.DCGM_DEV}
    fields = str(rng.choice(["dev", "default", "default", "full", "full"]))
    if fields != "dev":
        fams.add(Family.DCGM_PROF)
    if fields == "full" and p.gpu.prof == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
        if p.gpu.nvlink > 0:
            fams.add(Family.DCGM_PROF_NVLINK)
    if rng.random() < 0.95:
        fams.add(Family.CADVISOR)
        if math.isfinite(p.quota):
            fams.add(Family.CADVISOR_CFS)
    if rng.random() < 0.95:
        fams.add(Family.KSM)
    if rng.random() < 0.95:
        fams.add(Family.NODE)
        if rng.random() < 0.85:
            fams.add(Family.NODE_PSI)
        if p.fabric in ("ib", "roce") and rng.random() < 0.75:
            fams.add(Family.NODE_IB)
    if rng.random() < 0.7:
        fams.add(Family.SIDECAR)
    resets = frozenset(k for k in ("dcgm", "cadvisor", "node", "sidecar") if rng.random() < 0.12)
    return Cluster(scrape, collect, frozenset(fams), float(rng.uniform(0.0, 0.03)), resets)


# How each signal is collected: exporter, and "gauge", "counter", "ratio" (two counters) or a DCGM average.
DCGM_DEV_AVG = ("gpu_util", "mem_copy_util", "power_w")  # NVML's ~1 s sample period
DCGM_PROF_AVG = (
    "gr_engine_active",
    "tensor_active",
    "dram_active",
    "pcie_tx_bps",
    "pcie_rx_bps",
    "sm_active",
    "sm_occupancy",
    "nvlink_tx_bps",
    "nvlink_rx_bps",
    "fp32_active",
    "fp16_active",
)
DCGM_GAUGES = ("sm_clock_mhz", "fb_used_frac", "nvlink_total_bps", "power_limit_w", "clock_slowdown_frac")
COUNTERS = {
    "cadvisor": ("cpu_cores", "fs_read_bps"),
    "node": (
        "node_disk_read_bps",
        "node_disk_reads_ps",
        "node_disk_busy_frac",
        "node_majfault_ps",
        "node_net_rx_bps",
        "node_net_tx_bps",
        "ib_rx_bps",
        "ib_tx_bps",
        "node_psi_cpu_some",
        "node_psi_io_some",
        "node_psi_io_full",
        "node_psi_mem_some",
        "node_psi_mem_full",
    ),
    "sidecar": (
        "sc_psi_cpu_some",
        "sc_psi_io_some",
        "sc_psi_io_full",
        "sc_psi_mem_some",
        "sc_psi_mem_full",
        "sc_cpu_cores",
        "sc_io_read_bps",
        "sc_majfault_ps",
        "sc_swapin_ps",
        "sc_oom_kills",
    ),
}
GAUGES = {
    "cadvisor": ("mem_working_set_bytes",),
    "node": ("node_cpus", "node_mem_avail_frac", "node_swap_used_frac"),
    "sidecar": ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy"),
}
RATIOS = {  # name -> (exporter, numerator counters, denominator counters)
    "cpu_throttled_frac": ("cadvisor", ("cfs_throttled",), ("cfs_periods",)),
    "sc_throttled_frac": ("sidecar", ("sc_throttled",), ("sc_periods",)),
    "node_cpu_busy_frac": ("node", ("node_busy",), ("node_busy", "node_iowait", "node_idle")),
    "node_cpu_iowait_frac": ("node", ("node_iowait",), ("node_busy", "node_iowait", "node_idle")),
    "node_cpu_system_frac": ("node", ("node_system",), ("node_busy", "node_iowait", "node_idle")),
}


def _scrapes(rng: np.random.Generator, span: float, si: float, miss: float, reset: bool) -> tuple[FloatArray, float]:
    """Scrape instants over [0, span] (jittered, some missed) and the restart time (inf: none)."""
    t = float(rng.uniform(0.0, si)) + np.arange(0.0, span, si)
    t = t[t < span - 1e-3] + rng.normal(0.0, 0.01 * si, t[t < span - 1e-3].shape)
    t = np.clip(np.sort(t), 0.0, span - 1e-3)
    keep = rng.random(t.shape) >= miss
    restart = math.inf
    if reset:
        restart = float(rng.uniform(0.3, 0.9) * span)
        keep &= np.abs(t - restart) > si * float(rng.uniform(0.2, 1.5))  # the restart loses a scrape or two
    t = t[keep]
    t = t[np.r_[True, np.diff(np.rint(t * 1000.0)) > 0]]
    return t, restart


def counter_values(cum: FloatArray, t: FloatArray, restart: float) -> FloatArray:
    """A counter as scraped at ``t``: what was integrated by then, from zero again after a restart.

    Args:
        cum: (pods, seconds + 1): the integral at each second's end (column 0: the start).
        t: scrape instants, seconds from the trajectory's start.
        restart: when the exporter restarted (inf: never).
    """
    n = cum.shape[1] - 1
    k = np.clip(np.floor(t / RES).astype(np.int64), 0, n - 1) + 1
    val = cum[:, k]
    if math.isfinite(restart):
        at = cum[:, min(max(int(restart / RES), 0), n - 1) + 1]
        val = np.where(t >= restart, val - at[:, None], val)
    return val


def sample(
    p: JobPlan,
    cl: Cluster,
    tr: dict[str, FloatArray],
    rng: np.random.Generator,
    start: float,
    grid: FloatArray,
    step: float,
) -> list[dict[str, FloatArray]]:
    """Each pod's signals on the grid, in the contract's names and units, for the families the cluster has."""
    span = next(iter(tr.values())).shape[1] * RES
    out: list[dict[str, FloatArray]] = [{} for _ in range(p.nodes)]
    for short in ("dcgm", "cadvisor", "node", "sidecar", "ksm"):
        if not any(f.exporter_name == short for f in cl.families):
            continue
        si = cl.scrape[short]
        t, restart = _scrapes(rng, span, si, cl.miss, short in cl.resets)
        if t.size < 2:
            continue
        s = Sampler(start - p.pre + t, grid, range_seconds=rate_range(step, si), window=gauge_window(step, si))
        if short == "dcgm":
            values = _dcgm(cl, tr, rng, t, s)
        elif short == "ksm":
            values = (
                {"cpu_limit_cores": s.last(tr["cpu_limit_cores"][:, _idx(t, span)])} if math.isfinite(p.quota) else {}
            )
        else:
            values = _plain(short, cl, tr, t, restart, s)
        for name, v in values.items():
            if SIGNALS[name].family not in cl.families:
                continue
            if SIGNALS[name].unit == "ratio":
                v = np.clip(v, 0.0, 1.0)  # rate() extrapolation can overshoot a share by a hair
            for pod in range(p.nodes):
                out[pod][name] = v[pod]
    # the memory limit reaches the window from kube-state-metrics or the collector when cAdvisor's is dropped
    for pod in range(p.nodes):
        ref = out[pod].get("mem_working_set_bytes")
        if ref is not None:
            out[pod]["mem_limit_bytes"] = np.where(np.isfinite(ref), p.mem_limit, np.nan)
    return out


def _idx(t: FloatArray, span: float) -> npt.NDArray[np.int64]:
    """The second each instant falls in."""
    return np.clip(np.floor(t / RES).astype(np.int64), 0, round(span / RES) - 1)


def _dcgm(
    cl: Cluster, tr: dict[str, FloatArray], rng: np.random.Generator, t: FloatArray, s: Sampler
) -> dict[str, FloatArray]:
    """dcgm-exporter: each scrape reads what was collected at the last collection instant before it."""
    span = next(iter(tr.values())).shape[1] * RES
    phase = float(rng.uniform(0.0, cl.collect))
    tc = np.maximum(np.floor((t - phase) / cl.collect) * cl.collect + phase, 0.0)
    kc = _idx(tc, span) + 1
    names = [x for x in (*DCGM_DEV_AVG, *DCGM_PROF_AVG) if SIGNALS[x].family in cl.families]
    stacked = np.stack([tr[x] for x in names])  # (fields, pods, seconds)
    c = np.concatenate([np.zeros((*stacked.shape[:2], 1)), np.cumsum(stacked * RES, axis=2)], axis=2)
    # utilisation fields: NVML's ~1 s sample period; profiling fields: the whole collection interval
    widths = np.array([1 if x in DCGM_DEV_AVG else max(round(cl.collect / RES), 1) for x in names])
    lo = np.maximum(kc[None, :] - widths[:, None], 0)  # (fields, scrapes)
    f_idx = np.arange(len(names))[:, None]
    val = (c[f_idx, :, kc[None, :]] - c[f_idx, :, lo]) / ((kc[None, :] - lo) * RES)[..., None]
    last = s.last(np.moveaxis(val, -1, 1))  # (fields, pods, grid)
    out = {x: last[j] for j, x in enumerate(names)}
    out.update({name: s.last(tr[name][:, _idx(tc, span)]) for name in DCGM_GAUGES})
    return out


def _plain(
    short: str, cl: Cluster, tr: dict[str, FloatArray], t: FloatArray, restart: float, s: Sampler
) -> dict[str, FloatArray]:
    """cAdvisor, node-exporter, the collector: gauges at the scrape instant, counters through rate()."""
    pods, n = next(iter(tr.values())).shape
    k = _idx(t, n * RES)
    out = {name: s.last(tr[name][:, k]) for name in GAUGES.get(short, ())}
    wanted = [c for c in COUNTERS.get(short, ()) if SIGNALS[c].family in cl.families]
    ratios = {r: spec for r, spec in RATIOS.items() if spec[0] == short and SIGNALS[r].family in cl.families}
    wanted += [c for spec in ratios.values() for c in (*spec[1], *spec[2])]
    names = list(dict.fromkeys(wanted))
    if not names:
        return out
    cums = {name: np.concatenate([np.zeros((pods, 1)), np.cumsum(tr[name] * RES, axis=1)], axis=1) for name in names}
    counters = np.stack([counter_values(cums[name], t, restart) for name in names])
    rates = dict(zip(names, s.rate(counters), strict=True))  # one pass for the exporter's counters
    out.update({name: rates[name] for name in COUNTERS.get(short, ()) if name in rates})
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, (_, num, den) in ratios.items():
            out[name] = sum(rates[c] for c in num) / sum(rates[c] for c in den)
    return out
