"""node-exporter, cAdvisor, kube-state-metrics and the collector sidecar, per pod (one pod per node).

What each sees follows TELEMETRY.md: block reads show on the node's disk, cAdvisor and the pod's
io.stat, NFS/FUSE reads only as the node's network receive, object-store reads in the pod's own
network namespace; RDMA collectives bypass netdev and show on node_infiniband_* counters; object-store
readers wait in S state (no iowait, no io pressure); CFS counters exist only under a CPU limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyal.activity import Activity, Timeline
from bottleneck_operator_dev.familyal.draws import Setup
from bottleneck_operator_dev.familyal.exporters import Bins, Series, counter, scrape_times
from bottleneck_operator_dev.familyal.observe import Observation

F = npt.NDArray[np.float64]
CFS_PERIODS_PER_S = 10.0  # cpu.max's default period is 100 ms
SC = "bottleneck_sidecar_"


@dataclass(frozen=True)
class PodHost:
    """Per-second host quantities of one pod and its node (each (nbins,))."""

    cpu: F
    system: F
    throttled: F
    cpu_psi: F
    io_some: F
    io_full: F
    mem_some: F
    mem_full: F
    read: F
    majfault: F
    swapin: F
    oom: F
    pod_rx: F
    pod_tx: F
    node_busy: F
    node_system: F
    node_iowait: F
    node_rx: F
    node_tx: F
    rdma: F
    working_set: F
    procs_running: F
    procs_iowait: F
    procs_busy: F


def pod_host(s: Setup, act: Activity, tl: Timeline, pod: int, rng: np.random.Generator) -> PodHost:
    """Derive the pod's and its node's per-second host activity."""
    h = {k: np.clip(v[:, pod], 0.0, None) for k, v in act.host.items()}
    c, pipe, d = s.cluster, s.pipeline, s.disturbances
    t = tl.bin0 + np.arange(tl.nbins) + 0.5
    running = ((t >= tl.job_start) & (t < tl.edges[-1])).astype(np.float64)
    cpu = h["cpu"] + running * (t < tl.edges[0]) * 1.5
    if pipe.cpu_limit:
        cpu = np.minimum(cpu, pipe.cpu_limit)
    util = cpu / pipe.cpu_limit if pipe.cpu_limit else np.zeros_like(cpu)
    # Bursty loaders hit the quota inside a period well before their average reaches it.
    throttled = np.clip((util - 0.55) / 0.4, 0.0, 1.0) ** 1.5 * 0.95 * running
    neighbour = c.node_cores * (rng.uniform(0.03, 0.25) + d.noisy_share * np.clip(h["noisy"], 0, 1))
    busy = np.minimum(cpu + neighbour, c.node_cores)
    over = np.clip((cpu + neighbour) / c.node_cores - 0.85, 0.0, 1.0) * 3.0
    io_d = h["io_wait"] if c.storage.d_state else np.zeros_like(cpu)
    io_share = h["io_wait"] / np.maximum(h["io_wait"] + h["decode"], 1e-9)
    g = c.gpus
    mem_limit = pipe.mem_limit_gb * 1e9 if pipe.mem_limit_gb else c.node_mem_gb * 1e9 * 0.4
    level = 0.55 + 0.44 * d.mem_pressure
    ws = running * mem_limit * level * rng.lognormal(0.0, 0.01, cpu.size)
    return PodHost(
        cpu=cpu,
        system=np.minimum(h["system"], cpu),
        throttled=throttled,
        cpu_psi=np.clip(0.6 * throttled + over, 0.0, 1.0),
        io_some=1.0 - np.exp(-io_d),
        io_full=np.clip(h["data_wait"] / g * io_share * c.storage.d_state, 0.0, 1.0),
        mem_some=1.0 - np.exp(-h["mem_stall"]),
        mem_full=np.clip(h["mem_full"] / g, 0.0, 1.0),
        read=h["read"] * c.storage.block,
        majfault=h["majfault"],
        swapin=h["swapin"],
        oom=h["oom"],
        pod_rx=h["tcp"] + h["store_rx"] * c.storage.pod_net + running * 2e4,
        pod_tx=h["tcp"] + running * 1e4,
        node_busy=busy,
        node_system=np.minimum(h["system"] + 0.1 * neighbour, busy),
        node_iowait=np.minimum(c.node_cores - busy, 0.5 * io_d),
        node_rx=h["tcp"] + h["store_rx"] + rng.lognormal(np.log(2e6), 0.5, cpu.size),
        node_tx=h["tcp"] + rng.lognormal(np.log(1e6), 0.5, cpu.size),
        rdma=h["rdma"] + rng.lognormal(np.log(1e4), 0.5, cpu.size),
        working_set=ws,
        procs_running=running * g * (1.0 - np.clip(h["data_wait"] / g, 0, 1))
        + np.minimum(h["decode"], pipe.workers * g),
        procs_iowait=np.round(np.minimum(io_d, pipe.workers * g)),
        procs_busy=running * g + np.floor(0.8 * np.minimum(h["decode"], pipe.workers * g)),
    )


def node_series(s: Setup, obs: Observation, ph: PodHost, tl: Timeline, rng: np.random.Generator) -> Series:
    """node-exporter on the pod's node (series exist before the Job: the exporter runs all along)."""
    bins, c = Bins(tl.bin0, tl.nbins), s.cluster
    reset = obs.resets.get("node")
    t = scrape_times(rng, tl.bin0, tl.bin0 + tl.nbins - 1, obs.scrape["node"], obs.miss, reset)

    def ctr(rate: F, scale: float = 1e6) -> F:
        return counter(bins, rate, t, float(rng.uniform(0.0, scale)), reset)

    user = ph.node_busy - ph.node_system
    idle = c.node_cores - ph.node_busy - ph.node_iowait
    reads = ph.read / 131072.0 + 2.0
    counters = {
        'node_cpu_seconds_total{mode="user"}': ctr(user, 1e8),
        'node_cpu_seconds_total{mode="system"}': ctr(ph.node_system, 1e7),
        'node_cpu_seconds_total{mode="idle"}': ctr(np.maximum(idle, 0.0), 1e9),
        'node_cpu_seconds_total{mode="iowait"}': ctr(ph.node_iowait, 1e6),
        "node_disk_read_bytes_total": ctr(ph.read + 1e5, 1e13),
        "node_disk_reads_completed_total": ctr(reads, 1e8),
        "node_disk_io_time_seconds_total": ctr(1.0 - np.exp(-reads * c.storage_latency_s), 1e6),
        "node_vmstat_pgmajfault": ctr(ph.majfault + 1.0, 1e6),
        'node_network_receive_bytes_total{device="eth0"}': ctr(ph.node_rx, 1e13),
        'node_network_transmit_bytes_total{device="eth0"}': ctr(ph.node_tx, 1e13),
    }
    if "node_psi" in obs.present:
        counters |= {
            "node_pressure_cpu_waiting_seconds_total": ctr(ph.cpu_psi * 0.5, 1e5),
            "node_pressure_io_waiting_seconds_total": ctr(ph.io_some, 1e5),
            "node_pressure_io_stalled_seconds_total": ctr(ph.io_full, 1e5),
            "node_pressure_memory_waiting_seconds_total": ctr(ph.mem_some, 1e4),
            "node_pressure_memory_stalled_seconds_total": ctr(ph.mem_full, 1e4),
        }
    if "node_ib" in obs.present:
        counters |= {
            'node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"}': ctr(ph.rdma, 1e14),
            'node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",port="1"}': ctr(ph.rdma, 1e14),
        }
    total = c.node_mem_gb * 1e9
    other = total * rng.uniform(0.05, 0.3)
    swap_total = total * 0.0625 if c.swap else 0.0
    swapped = np.minimum(np.cumsum(ph.swapin) * 4096.0 * 0.3, swap_total)
    gauges = {
        "node_memory_MemTotal_bytes": np.full(t.size, total),
        "node_memory_MemAvailable_bytes": bins.at(np.clip(total - ph.working_set - other, 0.02 * total, None), t),
        "node_memory_SwapTotal_bytes": np.full(t.size, swap_total),
        "node_memory_SwapFree_bytes": bins.at(swap_total - swapped, t),
    }
    return Series("node", t, gauges, counters, reset)


def cadvisor_series(s: Setup, obs: Observation, ph: PodHost, tl: Timeline, rng: np.random.Generator) -> Series:
    """kubelet/cAdvisor's container series, summed over the pod's workload containers."""
    bins, pipe = Bins(tl.bin0, tl.nbins), s.pipeline
    reset = obs.resets.get("cadvisor")
    t = scrape_times(rng, tl.job_start + 1.0, tl.bin0 + tl.nbins - 1, obs.scrape["cadvisor"], obs.miss, reset)
    counters = {
        "container_cpu_usage_seconds_total": counter(bins, ph.cpu, t, 0.0, reset),
        "container_fs_reads_bytes_total": counter(bins, ph.read, t, 0.0, reset),
    }
    if pipe.cpu_limit:
        running = (ph.working_set > 0).astype(np.float64)
        counters["container_cpu_cfs_periods_total"] = counter(bins, CFS_PERIODS_PER_S * running, t, 0.0, reset)
        counters["container_cpu_cfs_throttled_periods_total"] = counter(
            bins, CFS_PERIODS_PER_S * ph.throttled, t, 0.0, reset
        )
    gauges = {"container_memory_working_set_bytes": bins.at(ph.working_set, t)}
    # kube-prometheus-stack drops cAdvisor's container_spec_* series.
    if pipe.mem_limit_gb and obs.layout["cadvisor"] == "plain":
        gauges["container_spec_memory_limit_bytes"] = np.full(t.size, pipe.mem_limit_gb * 1e9)
    return Series("cadvisor", t, gauges, counters, reset)


def ksm_series(s: Setup, obs: Observation, tl: Timeline, rng: np.random.Generator) -> Series:
    """kube-state-metrics' resource limits of the pod's workload containers."""
    t = scrape_times(rng, tl.job_start, tl.bin0 + tl.nbins - 1, obs.scrape["ksm"], obs.miss, None)
    gauges = {}
    if s.pipeline.cpu_limit:
        gauges['kube_pod_container_resource_limits{resource="cpu"}'] = np.full(t.size, s.pipeline.cpu_limit)
    if s.pipeline.mem_limit_gb:
        gauges['kube_pod_container_resource_limits{resource="memory"}'] = np.full(t.size, s.pipeline.mem_limit_gb * 1e9)
    return Series("ksm", t, gauges, {}, None)


def sidecar_series(s: Setup, obs: Observation, ph: PodHost, tl: Timeline, rng: np.random.Generator) -> Series:
    """The collector's view of the pod's own cgroup (and, where it has them, the pod's interfaces)."""
    bins, pipe = Bins(tl.bin0, tl.nbins), s.pipeline
    reset = obs.resets.get("sidecar")
    t = scrape_times(rng, tl.job_start + 5.0, tl.bin0 + tl.nbins - 1, obs.scrape["sidecar"], obs.miss, reset)

    def ctr(rate: F) -> F:
        return counter(bins, rate, t, 0.0, reset)

    pw, ps = f"{SC}pressure_waiting_seconds_total", f"{SC}pressure_stalled_seconds_total"
    counters = {
        f'{pw}{{resource="cpu"}}': ctr(ph.cpu_psi),
        f'{pw}{{resource="io"}}': ctr(ph.io_some),
        f'{ps}{{resource="io"}}': ctr(ph.io_full),
        f'{pw}{{resource="memory"}}': ctr(ph.mem_some),
        f'{ps}{{resource="memory"}}': ctr(ph.mem_full),
        f"{SC}cpu_usage_seconds_total": ctr(ph.cpu),
        f"{SC}io_read_bytes_total": ctr(ph.read),
        f"{SC}memory_major_faults_total": ctr(ph.majfault),
        f"{SC}memory_swapins_total": ctr(ph.swapin),
        f"{SC}memory_oom_kills_total": ctr(ph.oom),
    }
    if pipe.cpu_limit:
        running = (ph.working_set > 0).astype(np.float64)
        counters[f"{SC}cpu_periods_total"] = ctr(CFS_PERIODS_PER_S * running)
        counters[f"{SC}cpu_throttled_periods_total"] = ctr(CFS_PERIODS_PER_S * ph.throttled)
    if "sidecar_net" in obs.present:
        counters[f"{SC}network_receive_bytes_total"] = ctr(ph.pod_rx)
        counters[f"{SC}network_transmit_bytes_total"] = ctr(ph.pod_tx)
    noise = rng.integers(-1, 2, t.size)
    gauges = {
        f'{SC}processes{{state="running"}}': np.maximum(np.round(bins.at(ph.procs_running, t)) + noise, 0.0),
        f'{SC}processes{{state="iowait"}}': bins.at(ph.procs_iowait, t),
        f"{SC}busy_processes": bins.at(ph.procs_busy, t),
    }
    if pipe.mem_limit_gb:
        gauges[f"{SC}memory_max_bytes"] = np.full(t.size, pipe.mem_limit_gb * 1e9)
    return Series("sidecar", t, gauges, counters, reset)
