"""node-exporter's and the sidecar's series, read into the contract's signals.

node-exporter counts the whole node (a neighbour's CPU, disk and network included; RDMA only in the
infiniband collector's port counters); the sidecar counts the pod's own cgroup and network namespace.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyan.exporters import (
    FloatArray,
    Reader,
    Scrapes,
    counter,
    scrape_indices,
    starts,
    with_reset,
)
from bottleneck_operator_dev.familyan.physics import Plan
from bottleneck_operator_dev.familyan.render import Grid

PSI_NODE = {
    "node_psi_cpu_some": ("node_pressure_cpu_waiting_seconds_total", "npsi_cpu"),
    "node_psi_io_some": ("node_pressure_io_waiting_seconds_total", "npsi_io"),
    "node_psi_io_full": ("node_pressure_io_stalled_seconds_total", "npsi_io_full"),
    "node_psi_mem_some": ("node_pressure_memory_waiting_seconds_total", "npsi_mem"),
    "node_psi_mem_full": ("node_pressure_memory_stalled_seconds_total", "npsi_mem_full"),
}
NODE_COUNTERS = {
    "node_disk_read_bps": ("node_disk_read_bytes_total", "disk_rd"),
    "node_disk_reads_ps": ("node_disk_reads_completed_total", "disk_ops"),
    "node_disk_busy_frac": ("node_disk_io_time_seconds_total", "disk_busy"),
    "node_majfault_ps": ("node_vmstat_pgmajfault", "majf_node"),
    "node_net_rx_bps": ("node_network_receive_bytes_total", "net_rx"),
    "node_net_tx_bps": ("node_network_transmit_bytes_total", "net_tx"),
    "ib_rx_bps": ("node_infiniband_port_data_received_bytes_total", "ib_rx"),
    "ib_tx_bps": ("node_infiniband_port_data_transmitted_bytes_total", "ib_tx"),
}
SIDECAR_COUNTERS = {
    "sc_cpu_cores": ("bottleneck_sidecar_cpu_usage_seconds_total", "cpu"),
    "sc_io_read_bps": ("bottleneck_sidecar_io_read_bytes_total", "pod_rd"),
    "sc_majfault_ps": ("bottleneck_sidecar_memory_major_faults_total", "majf_pod"),
    "sc_swapin_ps": ("bottleneck_sidecar_memory_swapins_total", "swapin"),
    "sc_oom_kills": ("bottleneck_sidecar_memory_oom_kills_total", "oom"),
    "sc_psi_cpu_some": ("bottleneck_sidecar_pressure_waiting_seconds_total{resource=cpu}", "psi_cpu"),
    "sc_psi_io_some": ("bottleneck_sidecar_pressure_waiting_seconds_total{resource=io}", "psi_io"),
    "sc_psi_io_full": ("bottleneck_sidecar_pressure_stalled_seconds_total{resource=io}", "psi_io_full"),
    "sc_psi_mem_some": ("bottleneck_sidecar_pressure_waiting_seconds_total{resource=memory}", "psi_mem"),
    "sc_psi_mem_full": ("bottleneck_sidecar_pressure_stalled_seconds_total{resource=memory}", "psi_mem_full"),
    "sc_net_rx_bps": ("bottleneck_sidecar_network_receive_bytes_total", "pod_net_rx"),
    "sc_net_tx_bps": ("bottleneck_sidecar_network_transmit_bytes_total", "pod_net_tx"),
}


def _cpu_modes(plan: Plan, grid: Grid, rng: np.random.Generator) -> dict[str, FloatArray]:
    """node_cpu_seconds_total summed over CPUs, by mode (core-seconds per second integrated)."""
    cpus = float(plan.cluster.node_cpus)
    q = grid.q
    system = q["node_system"] * cpus
    iowait = q["node_iowait"] * cpus
    user = np.clip(q["node_busy"] * cpus - system, 0.0, None)
    idle = np.clip(cpus - user - system - iowait, 0.0, None)
    pods = user.shape[0]
    return {
        f'node_cpu_seconds_total{{mode="{mode}"}}': counter(v, starts(rng, pods, 1e5, 1e8))
        for mode, v in (("user", user), ("system", system), ("iowait", iowait), ("idle", idle))
    }


def node(
    plan: Plan, grid: Grid, rng: np.random.Generator, at: FloatArray, step: float
) -> tuple[dict[str, FloatArray], Scrapes]:
    """node-exporter on each pod's node."""
    c, q = plan.cluster, grid.q
    pods = q["cpu"].shape[0]
    idx = scrape_indices(rng, grid.t.size, c.scrape["node"])
    raw = _cpu_modes(plan, grid, rng)
    for metric, quantity in [*NODE_COUNTERS.values(), *PSI_NODE.values()]:
        raw[metric] = counter(q[quantity], starts(rng, pods, 1e3, 1e12))
    scr = Scrapes("node", idx, grid.t[idx], counters={k: v[:, idx] for k, v in raw.items()})
    swap_total = c.swap
    scr.gauges.update(
        {
            "node_memory_MemTotal_bytes": np.full((pods, idx.size), c.node_mem),
            "node_memory_MemAvailable_bytes": np.clip(c.node_mem - q["node_used"][:, idx], 0.0, None),
            "node_memory_SwapTotal_bytes": np.full((pods, idx.size), swap_total),
            "node_memory_SwapFree_bytes": swap_total * (1.0 - q["swap_frac"][:, idx]),
            "node_cpus": np.full((pods, idx.size), float(c.node_cpus)),
        }
    )
    r = Reader.of(scr, at, step, c.scrape["node"])
    modes = {m: r.rate(f'node_cpu_seconds_total{{mode="{m}"}}') for m in ("user", "system", "iowait", "idle")}
    total = sum(modes.values())
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "node_cpus": r.last("node_cpus"),
            "node_cpu_busy_frac": 1.0 - (modes["idle"] + modes["iowait"]) / total,
            "node_cpu_iowait_frac": modes["iowait"] / total,
            "node_cpu_system_frac": modes["system"] / total,
            "node_mem_avail_frac": r.last("node_memory_MemAvailable_bytes") / r.last("node_memory_MemTotal_bytes"),
            "node_swap_used_frac": (
                1.0 - r.last("node_memory_SwapFree_bytes") / r.last("node_memory_SwapTotal_bytes")
                if swap_total > 0
                else np.where(np.isfinite(r.last("node_memory_SwapTotal_bytes")), 0.0, np.nan)
            ),
        }
    for name, (metric, _) in [*NODE_COUNTERS.items(), *PSI_NODE.items()]:
        out[name] = r.rate(metric)
    return out, scr


def sidecar(plan: Plan, grid: Grid, rng: np.random.Generator, at: FloatArray, step: float,
            reset: int | None) -> tuple[dict[str, FloatArray], Scrapes]:  # fmt: skip
    """The collector in each pod: its cgroup's counters, restarting from zero if the collector restarts."""
    c, q = plan.cluster, grid.q
    pods = q["cpu"].shape[0]
    gap = None if reset is None else (reset, reset + int(rng.integers(1, 4)))
    idx = scrape_indices(rng, grid.t.size, c.scrape["sidecar"], gap)
    raw = {metric: counter(q[quantity], starts(rng, pods, 0.0, 1e6)) for metric, quantity in SIDECAR_COUNTERS.values()}
    if c.cpu_limit is not None:
        periods = np.full_like(q["cpu"], 10.0)
        raw["bottleneck_sidecar_cpu_periods_total"] = counter(periods, starts(rng, pods, 0, 1e6))
        raw["bottleneck_sidecar_cpu_throttled_periods_total"] = counter(
            periods * q["throttled"], starts(rng, pods, 0, 1e5)
        )
    if reset is not None:
        raw = {k: with_reset(v, reset) for k, v in raw.items()}
    positions = () if reset is None else (int(np.searchsorted(idx, reset)),)
    scr = Scrapes("sidecar", idx, grid.t[idx], counters={k: v[:, idx] for k, v in raw.items()}, resets=positions)
    scr.gauges.update(
        {
            "bottleneck_sidecar_processes{state=running}": np.round(q["procs_run"][:, idx]),
            "bottleneck_sidecar_processes{state=iowait}": np.round(q["procs_io"][:, idx]),
            "bottleneck_sidecar_busy_processes": np.round(q["procs_busy"][:, idx]),
            "bottleneck_sidecar_memory_max_bytes": np.full((pods, idx.size), plan.mem_limit),
        }
    )
    r = Reader.of(scr, at, step, c.scrape["sidecar"])
    out = {name: r.rate(metric) for name, (metric, _) in SIDECAR_COUNTERS.items()}
    out.update(
        sc_procs_running=r.last("bottleneck_sidecar_processes{state=running}"),
        sc_procs_iowait=r.last("bottleneck_sidecar_processes{state=iowait}"),
        sc_procs_busy=r.last("bottleneck_sidecar_busy_processes"),
        mem_limit_sidecar=r.last("bottleneck_sidecar_memory_max_bytes"),
    )
    if c.cpu_limit is not None:
        out["sc_throttled_frac"] = r.ratio(
            "bottleneck_sidecar_cpu_throttled_periods_total", "bottleneck_sidecar_cpu_periods_total"
        )
    return out, scr
