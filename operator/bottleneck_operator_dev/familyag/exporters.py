"""What the exporters publish for one pod: samples at scrape times, as Prometheus would store them.

Counters are the integrals of the pod's timeline up to each scrape (with small jitter on each
increment, and a drop to zero at a drawn exporter restart); gauges are readings at the scrape.
dcgm-exporter refreshes its values every collect interval and a scrape returns the latest refresh;
GPU_UTIL and MEM_COPY_UTIL cover the product's NVML sample period, the profiling fields the
collect interval, power a one-second average and the SM clock the last fraction of a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyag.hostlevels import MemoryState
from bottleneck_operator_dev.familyag.observe import Observation
from bottleneck_operator_dev.familyag.profile import FloatArray, PodTimeline
from bottleneck_operator_dev.familyag.scenario import Scenario
from bottleneck_operator_dev.familyag.segments import PRE_START
from bottleneck_operator_dev.familyag.stages import PodCosts

PROF_ROWS = ("busy", "tensor", "dram", "sm", "occ", "fp16", "fp32", "pcie_tx", "pcie_rx", "nvl_tx", "nvl_rx")


@dataclass(frozen=True)
class Samples:
    """One exporter's samples of one pod: scrape times and raw values by name."""

    times: FloatArray
    values: dict[str, FloatArray]
    interval: float


@dataclass(frozen=True)
class PodContext:
    """What the exporters of one pod need: its timeline, costs, memory and the Job's setup."""

    timeline: PodTimeline
    costs: PodCosts
    memory: MemoryState
    sc: Scenario
    obs: Observation
    start: float


def scrape_times(
    rng: np.random.Generator,
    first: float,
    last: float,
    interval: float,
    miss: float,
    gaps: Sequence[tuple[float, float]],
) -> FloatArray:
    """Scrape instants from ``first`` to ``last`` every ``interval`` (ms jitter, missed scrapes, outages)."""
    n = int(np.floor((last - first) / interval)) + 1
    if n <= 0:
        return np.empty(0)
    t = first + interval * np.arange(n) + rng.normal(0.0, 0.003, n)
    keep = rng.random(n) >= miss
    for g0, g1 in gaps:
        keep &= (t < g0) | (t >= g1)
    t = np.round(t[keep], 3)
    if t.size > 1:
        t = t[np.concatenate([[True], np.diff(t) > 0])]
    out: FloatArray = t
    return out


def _times(rng: np.random.Generator, ctx: PodContext, exporter: str, first: float) -> FloatArray:
    obs = ctx.obs
    interval = obs.scrape[exporter]
    gaps = [(ctx.start + a, ctx.start + b) for name, a, b in obs.gaps if name == exporter]
    offset = float(rng.uniform(0.0, interval))
    return scrape_times(rng, first + offset, ctx.start + obs.duration, interval, obs.miss, gaps)


def _caps(ctx: PodContext, rows: Sequence[str]) -> FloatArray:
    """Most each channel's counter can grow per second: 1 for stall shares, the node's CPUs for its CPU time."""
    cpus = float(ctx.sc.node_cpus)
    caps = []
    for r in rows:
        if "psi" in r or r == "n_disk_busy":
            caps.append(1.0)
        elif r in ("n_busy", "n_iowait", "n_sys"):
            caps.append(cpus)
        elif r == "cpu":
            caps.append(ctx.sc.cpu_limit if ctx.sc.cpu_limit is not None else cpus)
        else:
            caps.append(np.inf)
    return np.asarray(caps, dtype=np.float64)


def _jittered(
    rng: np.random.Generator, cum: FloatArray, times: FloatArray, caps: FloatArray, noise: float
) -> FloatArray:
    """Cumulative values with each increment jittered by a few per cent, non-decreasing and within ``caps``."""
    inc = np.diff(cum, axis=1, prepend=0.0)
    jitter = np.clip(1.0 + noise * rng.standard_normal(inc.shape), 0.5, 1.5)
    jitter[:, 0] = 1.0
    dt = np.diff(times, prepend=times[0])
    limit = np.full(inc.shape, np.inf)
    bounded = np.isfinite(caps)
    limit[bounded] = caps[bounded, None] * dt[None, :]
    limit[:, 0] = np.inf
    out: FloatArray = np.cumsum(np.minimum(inc * jitter, np.maximum(limit, inc)), axis=1)
    return out


def counters(
    rng: np.random.Generator, ctx: PodContext, exporter: str, rows: Sequence[str], times: FloatArray, base: float = 0.0
) -> dict[str, FloatArray]:
    """Counters of the named channels at ``times``: integrals since the series began, resets applied.

    Args:
        rng: the Job's generator.
        ctx: the pod.
        exporter: which exporter publishes them (its drawn resets apply).
        rows: timeline channels to integrate.
        times: scrape instants.
        base: seconds of history each counter carries from before the window (node counters since boot).

    Returns:
        Channel -> counter values.
    """
    if times.size == 0:
        return {r: np.empty(0) for r in rows}
    cum = _jittered(rng, ctx.timeline.cumulative(rows, times), times, _caps(ctx, rows), ctx.obs.noise)
    if base > 0.0:
        cum = cum + ctx.timeline.mean(rows, times[:1], 60.0) * base
    for name, at in ctx.obs.resets:
        if name == exporter:
            after = times >= ctx.start + at
            if after.any() and not after.all():
                k = int(np.argmax(after))
                cum[:, after] -= cum[:, k - 1 : k] * 0.999
    return {r: cum[i] for i, r in enumerate(rows)}


def _quantise(x: FloatArray, step: float) -> FloatArray:
    out: FloatArray = np.round(x / step) * step
    return out


def dcgm(rng: np.random.Generator, ctx: PodContext) -> Samples:
    """dcgm-exporter's samples of the pod's GPUs (means over them), from the pod's start."""
    sc, obs, tl = ctx.sc, ctx.obs, ctx.timeline
    times = _times(rng, ctx, "dcgm", ctx.start)
    collects = (
        ctx.start + float(rng.uniform(0.0, obs.collect)) + obs.collect * np.arange(int(obs.duration // obs.collect) + 2)
    )
    idx = np.searchsorted(collects, times, side="right") - 1
    times, idx = times[idx >= 0], idx[idx >= 0]
    at = np.asarray(collects[idx], dtype=np.float64)
    gpu = sc.gpu
    dev = tl.mean(("busy", "memutil"), at, gpu.util_period_s)
    prof = dict(zip(PROF_ROWS, tl.mean(PROF_ROWS, at, obs.collect), strict=True))
    sec = dict(
        zip(
            ("busy", "tensor", "dram", "nvl_tx", "nvl_rx"),
            tl.mean(("busy", "tensor", "dram", "nvl_tx", "nvl_rx"), at, 1.0),
            strict=True,
        )
    )
    recent = tl.mean(("busy",), at, 0.2)[0]
    noise = 1.0 + 0.5 * obs.noise * rng.standard_normal(times.size)
    activity = 0.3 * sec["busy"] + 0.45 * sec["tensor"] / 0.6 + 0.25 * sec["dram"] / 0.8
    power = np.minimum(gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * np.minimum(activity, 1.15), ctx.sc.power_cap) * noise
    idle_mhz = 0.15 * gpu.max_sm_mhz
    clock = idle_mhz + (gpu.max_sm_mhz * ctx.costs.clock - idle_mhz) * np.minimum(1.0, 4.0 * recent)
    values = {
        "util": _quantise(np.clip(dev[0], 0.0, 1.0), 0.01),
        "memutil": _quantise(np.clip(dev[1] * noise, 0.0, 1.0), 0.01),
        "fb": np.clip(obs.fb_frac + 0.002 * rng.standard_normal(times.size), 0.0, 1.0),
        "power": power,
        "clock": _quantise(clock, 15.0),
        "nvl_total": sec["nvl_tx"] + sec["nvl_rx"],
        "power_limit": np.full(times.size, ctx.sc.power_cap),
        "slowdown": ((sec["busy"] > 0.3) & ctx.costs.slowed).astype(np.float64),
        "xid": np.zeros(times.size),
    }
    for name, v in prof.items():
        values[name] = np.clip(v * noise, 0.0, 1.0) if name not in ("pcie_tx", "pcie_rx", "nvl_tx", "nvl_rx") else v
    return Samples(times, values, obs.scrape["dcgm"])


def node(rng: np.random.Generator, ctx: PodContext) -> Samples:
    """node-exporter's samples of the pod's node: they began long before the Job."""
    times = _times(rng, ctx, "node", ctx.start - PRE_START + 1.0)
    rows = ("n_busy", "n_iowait", "n_sys", "n_disk_rd", "n_disk_ops", "n_disk_busy", "n_majflt", "n_rx", "n_tx")
    psi = ("n_psi_cpu", "n_psi_io", "n_psi_io_full", "n_psi_mem", "n_psi_mem_full", "ib_rx", "ib_tx")
    uptime = float(rng.uniform(2e5, 3e6))
    values = counters(rng, ctx, "node", rows + psi, times, uptime)
    cpus = float(ctx.sc.node_cpus)
    total = cpus * (times - times[0] + uptime) if times.size else np.empty(0)
    values["n_total"] = total
    mem = ctx.memory
    running = times >= ctx.start + ctx.obs.startup * 0.5
    freed = mem.working_set / ctx.sc.node_ram
    values["mem_avail"] = np.clip(np.where(running, mem.avail_frac, mem.avail_frac + freed), 0.0, 0.99)
    values["swap_used"] = np.where(running, mem.swap_frac, mem.swap_frac * 0.3)
    values["cpus"] = np.full(times.size, cpus)
    return Samples(times, values, ctx.obs.scrape["node"])


def cadvisor(rng: np.random.Generator, ctx: PodContext) -> Samples:
    """kubelet/cAdvisor's samples of the pod's containers (the collector left out)."""
    times = _times(rng, ctx, "cadvisor", ctx.start)
    values = counters(rng, ctx, "cadvisor", ("cpu", "fs_rd", "throttled", "periods"), times)
    running = times >= ctx.start + ctx.obs.startup
    wset = ctx.memory.working_set * (1.0 + 0.01 * rng.standard_normal(times.size))
    values["wset"] = np.where(running, wset, wset * 0.4)
    limit = ctx.sc.mem_limit
    values["mlimit"] = np.full(times.size, limit if limit is not None else np.nan)
    return Samples(times, values, ctx.obs.scrape["cadvisor"])


def ksm(rng: np.random.Generator, ctx: PodContext) -> Samples:
    """kube-state-metrics: the workload containers' CPU limit."""
    times = _times(rng, ctx, "ksm", ctx.start)
    limit = ctx.sc.cpu_limit
    return Samples(
        times, {"cpu_limit": np.full(times.size, limit if limit is not None else np.nan)}, ctx.obs.scrape["ksm"]
    )


def sidecar(rng: np.random.Generator, ctx: PodContext) -> Samples:
    """The collector's samples of the pod's own cgroup and network namespace."""
    times = _times(rng, ctx, "sidecar", ctx.start + 2.0)
    rows = ("psi_cpu", "psi_io", "psi_io_full", "psi_mem", "psi_mem_full", "cpu", "throttled", "periods", "fs_rd")
    values = counters(rng, ctx, "sidecar", (*rows, "majflt", "swapin", "pod_rx", "pod_tx"), times)
    values["cpu"] = values["cpu"] + 0.02 * (times - times[0] if times.size else times)
    values["oom"] = np.zeros(times.size)
    for name in ("running", "dstate", "busyp"):
        level = ctx.timeline.mean((name,), times, 0.5)[0]
        values[name] = rng.poisson(np.maximum(level, 0.0)).astype(np.float64) if name != "busyp" else np.round(level)
    return Samples(times, values, ctx.obs.scrape["sidecar"])
