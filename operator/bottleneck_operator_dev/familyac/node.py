"""node-exporter on the pod's node: node-wide, so the Job's other pods there and its neighbours move it too.

RDMA collectives bypass the netdev counters and show in the infiniband collector instead; remote
reads and TCP collectives show as network bytes; only local block devices show as disk reads.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyac.context import Context, FloatArray
from bottleneck_operator_dev.familyac.hardware import PAGE
from bottleneck_operator_dev.familyac.host import faults_per_s, interval_rates, pressures, tcp_bytes
from bottleneck_operator_dev.familyac.sources import Reader, counter, scrape_times

Counter = Callable[[FloatArray], FloatArray]
NEIGHBOUR_DRIFT = 0.1  # neighbours' load wanders by this share over the window (assumed)


def _neighbours(ctx: Context, times: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Other tenants on the node: cores, disk and network bytes, faults, memory (slowly varying)."""
    cfg = ctx.cfg
    n = times.size
    wave = 1 + NEIGHBOUR_DRIFT * np.sin(2 * np.pi * (times - ctx.start) / rng.uniform(600, 3600) + rng.uniform(0, 6.3))
    busy = 1.0 if cfg.neighbour_pods else 0.0
    return {
        "cores": cfg.neighbour_cores * wave * rng.lognormal(0, 0.05, n),
        "disk": busy * rng.uniform(0, 30e6) * wave,
        "net": busy * rng.uniform(1e6, 50e6) * wave,
        "faults": rng.uniform(0, 30) * wave,
        "mem": np.full(n, rng.uniform(0.05, 0.4) * cfg.node_mem),
    }


def _cpu_modes(
    ctx: Context, job_cpu: FloatArray, nb: FloatArray, waiters: FloatArray, system: FloatArray
) -> dict[str, FloatArray]:
    """Node CPU seconds per second by mode: busy capped at the node's cores, iowait from idle ones."""
    cpus = float(ctx.cfg.node_cpus)
    busy = np.minimum(cpus, job_cpu + nb + system)
    sys = np.minimum(busy, system)
    iowait = np.minimum(cpus - busy, waiters)
    return {"user": busy - sys, "system": sys, "iowait": iowait, "idle": cpus - busy - iowait}


def node_signals(ctx: Context, pods_here: int, phases: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The node's signals for a pod whose node runs ``pods_here`` of the Job's pods."""
    cfg, s = ctx.cfg, ctx.stages
    si = cfg.node_scrape
    times = scrape_times(rng, ctx.start, ctx.end, si, ctx.step, cfg.missing)
    r, dt = interval_rates(ctx, times, phases)
    reset = ctx.reset_at if cfg.reset == "node" else None
    reader = Reader.of(times, ctx.grid, ctx.step, si)

    def cum(per_s: FloatArray, noise: float = 0.02) -> FloatArray:
        return counter(rng, np.cumsum(per_s * dt), reset, times, noise)

    def share(per_s: FloatArray) -> FloatArray:
        """A seconds-per-second counter (busy time, stall time): exact, never above one."""
        return cum(np.clip(per_s, 0, 1), 0.0)

    nb = _neighbours(ctx, times, rng)
    p = pressures(ctx, r, rng)
    faults = faults_per_s(ctx, r) * pods_here + nb["faults"]
    rx, tx = tcp_bytes(ctx, r)
    rx, tx = rx * pods_here + nb["net"], tx * pods_here + nb["net"] * 0.5
    job_cpu = (r["cpu"] + 0.15 * cfg.gpus_per_pod) * pods_here
    system = 0.01 * cfg.node_cpus + 0.3 * r["fault"] * pods_here + (rx + tx) / 2e9  # kernel: reclaim, TCP
    waiters = (p["io_some"] * min(cfg.workers, 4) * cfg.gpus_per_pod + p["mem_some"]) * pods_here
    modes = {k: cum(v, 0.0) for k, v in _cpu_modes(ctx, job_cpu, nb["cores"], waiters, system).items()}
    rates = {k: reader.rate(v) for k, v in modes.items()}
    total = sum(rates.values(), start=np.zeros(ctx.grid.size))
    local = r["read_bytes"] * pods_here if ctx.local_reads else np.zeros_like(dt)
    swap = faults * PAGE * 0.9 if cfg.swap and s.fault_latency > 0 else np.zeros_like(dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "node_cpus": reader.last(np.full(times.size, float(cfg.node_cpus))),
            "node_cpu_busy_frac": (rates["user"] + rates["system"]) / total,
            "node_cpu_iowait_frac": rates["iowait"] / total,
            "node_cpu_system_frac": rates["system"] / total,
        }
    out |= {
        "node_disk_read_bps": reader.rate(cum(local + swap + nb["disk"])),
        "node_disk_reads_ps": reader.rate(cum(local / (512 * 1024.0) + swap / PAGE + nb["disk"] / 65536.0)),
        "node_disk_busy_frac": reader.rate(
            share((r["read"] / cfg.gpus_per_pod if ctx.local_reads else 0.0) + nb["disk"] / 1e9 + swap / 2e8)
        ),
        "node_majfault_ps": reader.rate(cum(faults)),
        "node_net_rx_bps": reader.rate(cum(rx)),
        "node_net_tx_bps": reader.rate(cum(tx)),
        "node_mem_avail_frac": reader.last(
            np.clip(1 - (pods_here * cfg.mem_demand + nb["mem"]) / cfg.node_mem, 0.02, 1)
            * rng.normal(1, 0.005, times.size)
        ),
        "node_swap_used_frac": reader.last(
            np.full(times.size, (0.05 + 0.4 * min(1.0, s.fault_latency * 1e3)) if cfg.swap else 0.0)
        ),
    }
    out |= _node_psi(ctx, p, pods_here, job_cpu + nb["cores"], share, reader)
    if cfg.fabric in ("ib", "roce"):
        out |= _infiniband(ctx, r, cum, reader)
    return out


def _node_psi(
    ctx: Context, p: dict[str, FloatArray], pods_here: int, demand: FloatArray, cum: Counter, reader: Reader
) -> dict[str, FloatArray]:
    """Node pressure: the Job's pods' stalls (any task anywhere counts for "some") and the node's contention."""
    cpus = float(ctx.cfg.node_cpus)
    contention = np.clip((demand / cpus - 0.85) * 3, 0, 1)
    some = {k: 1 - (1 - p[k]) ** pods_here for k in ("io_some", "mem_some")}
    return {
        "node_psi_cpu_some": reader.rate(cum(np.clip(contention + 0.005, 0, 1))),
        "node_psi_io_some": reader.rate(cum(np.clip(some["io_some"] + 0.002, 0, 1))),
        "node_psi_io_full": reader.rate(cum(np.clip(p["io_full"] * 0.5, 0, 1))),
        "node_psi_mem_some": reader.rate(cum(some["mem_some"])),
        "node_psi_mem_full": reader.rate(cum(p["mem_full"] * 0.3)),
    }


def _infiniband(ctx: Context, r: dict[str, FloatArray], cum: Counter, reader: Reader) -> dict[str, FloatArray]:
    """The HCA's port counters: the node's share of RDMA all-reduce bytes (zero within one node)."""
    s = ctx.stages
    rdma = (
        r["comm_bytes"] * s.inter_bytes / s.grad_bytes / ctx.cfg.gpus_per_pod
        if s.inter_bytes > 0
        else np.zeros_like(r["comm_bytes"])
    )
    return {"ib_rx_bps": reader.rate(cum(rdma + 1e3)), "ib_tx_bps": reader.rate(cum(rdma + 1e3))}


NODE_FAMILIES = (Family.NODE, Family.NODE_PSI, Family.NODE_IB)
