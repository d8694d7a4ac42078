"""The host-side exporters: cAdvisor, kube-state-metrics, the collector sidecar and node-exporter.

Counters here are the exporters' real counters (CPU seconds, bytes, periods, faults, PSI stall
seconds), integrated from the activity's rates; gauges are read at the scrape. CFS throttling
follows the kernel's CFS bandwidth control (Documentation/scheduler/sched-bwc.rst): 10 periods a
second at the default 100 ms period, and a period is throttled when the group uses its quota
before the period ends - nearly every period once the demand reaches the limit, and some periods
below it because demand is bursty.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyd.activity import STALL_CEILING, PodActivity
from bottleneck_operator_dev.familyd.nodes import NodeActivity
from bottleneck_operator_dev.familyd.scrapes import Scrapes, counters, more_counters
from bottleneck_operator_dev.familyd.stages import FloatArray
from bottleneck_operator_dev.familyd.workload import Workload
from bottleneck_operator_dev.familyd.world import Rng, Setup

PERIODS_PER_SECOND = 10.0  # cpu.max's default period is 100 ms
HOUR = 3600.0


def throttled_share(setup: Setup, act: PodActivity, rng: Rng) -> FloatArray:
    """Share of CFS periods throttled (0 without a CPU limit)."""
    if setup.cpu_limit is None:
        return np.zeros_like(act.cores)
    load = act.demand / setup.cpu_limit
    burst = float(rng.uniform(0.02, 0.06))
    share = 1.0 / (1.0 + np.exp(-(load - 0.93) / burst))
    return np.asarray(np.clip(0.9 * share + 0.04 * load, 0.0, 0.995), dtype=np.float64)


def cpu_pressure(setup: Setup, act: PodActivity, node: NodeActivity, thr: FloatArray, rng: Rng) -> FloatArray:
    """The pod's cpu.pressure "some": waiting for a quota refill or for a free CPU."""
    node_rows = node.psi_cpu[np.arange(setup.pods) // setup.pods_per_node]
    runnable = np.minimum(act.demand / np.maximum(act.cores, 0.1) - 1.0, 1.0).clip(0.0)
    some = thr * float(rng.uniform(0.55, 0.85)) + node_rows * 0.8 + 0.3 * runnable
    return np.asarray(np.clip(some + rng.uniform(0.002, 0.02), 0.0, STALL_CEILING), dtype=np.float64)


def oom_rate(rng: Rng, w: Workload, shape: tuple[int, ...]) -> FloatArray:
    """OOM kills as a rate on the grid: under pressure without enough swap, a helper is killed now and then."""
    rate = np.zeros(shape)
    if w.mem_kind and rng.random() < 0.4:
        for row in range(shape[0]):
            rate[row, int(rng.integers(0, shape[1]))] = 1.0 / 5.0  # one kill inside one 5 s grid step
    return rate


def cadvisor_scrapes(rng: Rng, setup: Setup, w: Workload, act: PodActivity, thr: FloatArray, s: Scrapes) -> Scrapes:
    """container_* series of the trainer container (the collector's own container excluded)."""
    rates = {
        "container_cpu_usage_seconds_total": act.cores,
        "container_fs_reads_bytes_total": act.block_bps,
    }
    if setup.cpu_limit is not None:
        periods = PERIODS_PER_SECOND * np.minimum(act.cores / 0.05, 1.0)
        rates["container_cpu_cfs_periods_total"] = periods
        rates["container_cpu_cfs_throttled_periods_total"] = periods * thr
    counters(rng, s, rates, 0.0, (0.5 * HOUR, 48 * HOUR))
    limit = setup.mem_limit if setup.mem_limit is not None else setup.node_mem / setup.pods_per_node
    full = w.mem_kind != "" and not w.node_pressure
    level = rng.uniform(0.955, 0.995, size=(setup.pods, 1)) if full else rng.uniform(0.15, 0.75, size=(setup.pods, 1))
    s.gauges["container_memory_working_set_bytes"] = limit * np.clip(
        level + 0.003 * rng.standard_normal((setup.pods, s.index.size)), 0.0, 0.999
    )
    return s


def ksm_scrapes(setup: Setup, s: Scrapes) -> Scrapes:
    """kube_pod_container_resource_limits for the trainer's CPU and memory, where they are set."""
    shape = (setup.pods, s.index.size)
    if setup.cpu_limit is not None:
        s.gauges["cpu_limit"] = np.full(shape, setup.cpu_limit)
    if setup.mem_limit is not None:
        s.gauges["memory_limit"] = np.full(shape, setup.mem_limit)
    return s


def sidecar_scrapes(
    rng: Rng,
    setup: Setup,
    w: Workload,
    act: PodActivity,
    node: NodeActivity,
    thr: FloatArray,
    s: Scrapes,
    own_rng: Rng | None = None,
) -> Scrapes:
    """bottleneck_sidecar_* series: the pod cgroup's PSI, CPU, I/O, memory events and processes, and
    the pod network namespace's bytes (drawn from ``own_rng``, so no other draw moves)."""
    rates = {
        "psi_cpu_some": cpu_pressure(setup, act, node, thr, rng),
        "psi_io_some": act.io_wait,
        "psi_io_full": act.io_full,
        "psi_memory_some": act.mem_wait,
        "psi_memory_full": act.mem_full,
        "cpu_usage": act.cores,
        "io_read_bytes": act.block_bps,
        "major_faults": act.majfault,
        "swapins": act.swapin,
        "oom_kills": oom_rate(rng, w, act.cores.shape),
    }
    if setup.cpu_limit is not None:
        periods = PERIODS_PER_SECOND * np.minimum(act.cores / 0.05, 1.0)
        rates["periods"], rates["throttled_periods"] = periods, periods * thr
    counters(rng, s, rates, 0.06, (0.2 * HOUR, 24 * HOUR))
    at = s.index
    workers = float(w.workers)
    loader = act.loader_busy[:, at]
    busy_workers = rng.binomial(int(workers), np.clip((loader - 0.75) / 0.25, 0.0, 1.0))
    spinning = setup.gpus * (act.busy[:, at] > 0.9) * (w.main_cores >= 0.9)
    s.gauges["procs_busy"] = (busy_workers + spinning).astype(np.float64)
    s.gauges["procs_running"] = s.gauges["procs_busy"] + rng.poisson(0.3 + 2.0 * thr[:, at])
    s.gauges["procs_iowait"] = rng.poisson(act.dstate[:, at]).astype(np.float64)
    if setup.mem_limit is not None:
        s.gauges["memory_max"] = np.full(at.shape, setup.mem_limit)[None, :].repeat(setup.pods, axis=0)
    net = {"network_receive_bytes": node.pod_net_rx, "network_transmit_bytes": node.pod_net_tx}
    more_counters(own_rng if own_rng is not None else np.random.default_rng(0), s, net, (0.2 * HOUR, 24 * HOUR))
    return s


def node_scrapes(rng: Rng, setup: Setup, node: NodeActivity, s: Scrapes) -> Scrapes:
    """node_* series of the job's nodes."""
    cpus = node.cpus
    user = node.busy - node.system
    rates = {
        "cpu_user": user,
        "cpu_system": node.system,
        "cpu_iowait": node.iowait,
        "cpu_idle": cpus - node.busy - node.iowait,
        "node_disk_read_bytes_total": node.disk_bps,
        "node_disk_reads_completed_total": node.disk_iops,
        "node_disk_io_time_seconds_total": node.disk_util,
        "node_vmstat_pgmajfault": node.majfault,
        "node_network_receive_bytes_total": node.net_rx,
        "node_network_transmit_bytes_total": node.net_tx,
        "node_pressure_cpu_waiting_seconds_total": node.psi_cpu,
        "node_pressure_io_waiting_seconds_total": node.psi_io,
        "node_pressure_io_stalled_seconds_total": node.psi_io_full,
        "node_pressure_memory_waiting_seconds_total": node.psi_mem,
        "node_pressure_memory_stalled_seconds_total": node.psi_mem_full,
        "node_infiniband_port_data_received_bytes_total": node.ib_rx,
        "node_infiniband_port_data_transmitted_bytes_total": node.ib_tx,
    }
    # kernel counters run since boot, so node-exporter restarts do not reset them; an interface or
    # HCA that is reset (driver reload, `perfquery -R`) does
    counters(rng, s, rates, 0.03, (6 * HOUR, 30 * 24 * HOUR))
    at = s.index
    total = setup.node_mem
    s.gauges["node_memory_MemTotal_bytes"] = np.full((setup.nodes, at.size), total)
    s.gauges["node_memory_MemAvailable_bytes"] = node.mem_avail[:, at] * total
    s.gauges["node_memory_SwapTotal_bytes"] = np.full((setup.nodes, at.size), node.swap_total)
    s.gauges["node_memory_SwapFree_bytes"] = node.swap_total * (1.0 - node.swap_used[:, at])
    s.gauges["node_cpus"] = np.full((setup.nodes, at.size), cpus)
    return s
