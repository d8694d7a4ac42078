"""The pod's own host signals: kubelet/cAdvisor, kube-state-metrics and the collector sidecar.

All of them see the pod's cgroup only, so neighbours never move them. Shares (pressure, throttling)
are worked out per scrape interval from the pod's integrals; counters are their running sums.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyac.context import Context, FloatArray
from bottleneck_operator_dev.familyac.hardware import CFS_PERIOD_S, PAGE
from bottleneck_operator_dev.familyac.sources import Reader, counter, scrape_times

READAHEAD = 128 * 1024.0  # a memory-mapped dataset faults in readahead-sized chunks (assumed 128 KiB)


def interval_rates(ctx: Context, times: FloatArray, phases: FloatArray) -> tuple[dict[str, FloatArray], FloatArray]:
    """The pod's per-second quantities over each scrape interval, and the interval lengths."""
    cum = ctx.pod(times, phases)
    dt = np.diff(times, prepend=times[0] - (times[1] - times[0] if times.size > 1 else 1.0))
    d = np.diff(cum, axis=1, prepend=cum[:, :1] - (cum[:, 1:2] - cum[:, :1] if times.size > 1 else 0.0))
    rates = {n: np.clip(d[i] / dt, 0.0, None) for i, n in enumerate(ctx.integ.names)}
    return rates, dt


def pressures(ctx: Context, r: dict[str, FloatArray], rng: np.random.Generator) -> dict[str, FloatArray]:
    """The pod cgroup's pressure shares per interval (PSI: share of time some / all tasks wait)."""
    cfg, s = ctx.cfg, ctx.stages
    g, w = cfg.gpus_per_pod, cfg.workers
    n = r["cpu"].size
    read = np.clip(r["read"] / g, 0, 1)
    fault = np.clip(r["fault"] / g, 0, 1)
    main = np.clip(r["main"] / g, 0, 1)
    active = np.clip((r["decode"] + r["main"]) / (g * (w + 1)), 0, 1)
    cpu_some = np.clip(active * (1 - 1 / s.cpu_stretch) * 1.5 + 0.01 * rng.random(n), 0, 1)
    io_some = 1 - (1 - read) ** g if ctx.blocking_reads else 0.001 * rng.random(n)
    waiting = np.clip(r["read"] / np.maximum(r["read"] + r["decode"], 1e-9), 0, 1)
    io_full = io_some * waiting ** min(w, 3) * (1 - main)
    mem_some = 1 - (1 - fault) ** g
    return {
        "cpu_some": cpu_some,
        "io_some": np.clip(io_some, 0, 1),
        "io_full": np.clip(io_full, 0, 1),
        "mem_some": np.clip(mem_some, 0, 1),
        "mem_full": np.clip(mem_some * rng.uniform(0.3, 0.6), 0, 1),
    }


def throttled_share(ctx: Context, cpu_rate: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Share of CFS periods in which the quota ran out: nearly all when demand exceeds it."""
    limit = ctx.cfg.cpu_limit or np.inf
    base = np.clip((cpu_rate / limit) ** 6, 0, 1) * 0.9
    if ctx.stages.quota_stretch > 1.02:
        base = np.maximum(base, rng.uniform(0.75, 0.98))
    return np.clip(base + rng.normal(0, 0.01, cpu_rate.size), 0, 1)


def faults_per_s(ctx: Context, r: dict[str, FloatArray]) -> FloatArray:
    """Major faults: memory-pressure stalls over one fault's latency, plus a mapped dataset's reads."""
    s = ctx.stages
    out = r["fault"] / s.fault_latency if s.fault_latency > 0 else np.zeros_like(r["fault"])
    if ctx.cfg.storage == "mmap":
        out = out + r["read_bytes"] / READAHEAD
    return out + 0.5


def tcp_bytes(ctx: Context, r: dict[str, FloatArray]) -> tuple[FloatArray, FloatArray]:
    """What crosses the pod's kernel network stack (rx, tx): remote reads and TCP collectives."""
    cfg, s = ctx.cfg, ctx.stages
    remote = r["read_bytes"] if cfg.storage in ("nfs", "object") else np.zeros_like(r["read_bytes"])
    coll = np.zeros_like(remote)
    if cfg.fabric == "tcp" and cfg.nodes > 1 and s.grad_bytes > 0:
        coll = r["comm_bytes"] * s.inter_bytes / s.grad_bytes / cfg.ranks_per_node
    return remote + coll + 2e4, coll + remote * 0.01 + 1e4


def cadvisor_signals(ctx: Context, phases: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """kubelet/cAdvisor (and kube-state-metrics' CPU limit), on the node exporters' scrape interval."""
    cfg = ctx.cfg
    si = cfg.node_scrape
    times = scrape_times(rng, ctx.start, ctx.end, si, ctx.step, cfg.missing)
    r, dt = interval_rates(ctx, times, phases)
    reset = ctx.reset_at if cfg.reset == "cadvisor" else None
    reader = Reader.of(times, ctx.grid, ctx.step, si)
    cpu = r["cpu"] + 0.15 * cfg.gpus_per_pod
    limit = cfg.mem_limit if cfg.mem_limit is not None else np.nan
    ws = min(cfg.mem_demand, 0.99 * limit) if cfg.mem_limit is not None else cfg.mem_demand
    out = {
        "cpu_cores": reader.rate(counter(rng, np.cumsum(cpu * dt), reset, times)),
        "fs_read_bps": reader.rate(
            counter(rng, np.cumsum((r["read_bytes"] if ctx.local_reads else np.zeros_like(dt)) * dt), reset, times)
        ),
        "mem_working_set_bytes": reader.last(ws * rng.normal(1.0, 0.01, times.size)),
        "mem_limit_bytes": reader.last(np.full(times.size, limit)),
    }
    if cfg.cpu_limit is not None:
        periods = np.cumsum(dt / CFS_PERIOD_S)
        thr = np.cumsum(dt / CFS_PERIOD_S * throttled_share(ctx, cpu, rng))
        out["cpu_throttled_frac"] = reader.ratio(
            counter(rng, thr, reset, times, 0.0), counter(rng, periods, reset, times, 0.0)
        )
        out["cpu_limit_cores"] = reader.last(np.full(times.size, cfg.cpu_limit))
    return out


def sidecar_signals(ctx: Context, phases: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The collector's pod-cgroup signals (CPU, pressure, IO, faults, processes, its own network bytes)."""
    cfg, s = ctx.cfg, ctx.stages
    times = scrape_times(rng, ctx.start, ctx.end, cfg.scrape, ctx.step, cfg.missing)
    r, dt = interval_rates(ctx, times, phases)
    reset = ctx.reset_at if cfg.reset == "sidecar" else None
    reader = Reader.of(times, ctx.grid, ctx.step, cfg.scrape)

    def rate_of(per_s: FloatArray, noise: float = 0.02) -> FloatArray:
        return reader.rate(counter(rng, np.cumsum(per_s * dt), reset, times, noise))

    p = pressures(ctx, r, rng)
    faults = faults_per_s(ctx, r)
    cpu = r["cpu"] + 0.15 * cfg.gpus_per_pod + 0.02
    swapin = faults * 0.9 if cfg.swap and s.fault_latency > 0 else np.zeros_like(faults)
    local = r["read_bytes"] if ctx.local_reads else np.zeros_like(faults)
    out = {f"sc_psi_{k}": rate_of(np.clip(v, 0, 1), 0.0) for k, v in p.items()}
    out |= {
        "sc_cpu_cores": rate_of(cpu),
        "sc_io_read_bps": rate_of(local + swapin * PAGE),
        "sc_majfault_ps": rate_of(faults),
        "sc_swapin_ps": rate_of(swapin),
        "sc_oom_kills": rate_of(r["kills"]),
        "sc_procs_running": reader.last(rng.poisson(cpu).astype(np.float64)),
        "sc_procs_iowait": reader.last(
            rng.poisson(np.clip(p["io_some"] * min(cfg.workers, 4) * cfg.gpus_per_pod + p["mem_some"], 0, None)).astype(
                np.float64
            )
        ),
        "sc_procs_busy": reader.last(_busy_procs(ctx, r)),
    }
    if cfg.cpu_limit is not None:
        thr = np.cumsum(dt / CFS_PERIOD_S * throttled_share(ctx, cpu, rng))
        out["sc_throttled_frac"] = reader.ratio(
            counter(rng, thr, reset, times, 0.0), counter(rng, np.cumsum(dt / CFS_PERIOD_S), reset, times, 0.0)
        )
    if cfg.sidecar_net:
        rx, tx = tcp_bytes(ctx, r)
        out["sc_net_rx_bps"], out["sc_net_tx_bps"] = rate_of(rx), rate_of(tx)
    return out


def _busy_procs(ctx: Context, r: dict[str, FloatArray]) -> FloatArray:
    """Processes at 0.9 of a core or more: main threads launching flat out, workers decoding flat out."""
    g, w = ctx.cfg.gpus_per_pod, ctx.cfg.workers
    main = np.where(r["main"] / g / ctx.stages.cpu_stretch >= 0.9, g, 0)
    workers = np.where(r["decode"] / (g * w) / ctx.stages.cpu_stretch >= 0.9, g * w, 0)
    return (main + workers).astype(np.float64)
