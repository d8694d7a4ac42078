"""The host-side exporters' view of the trace: cAdvisor, kube-state-metrics, node-exporter, the collector.

Counters are the trace's cumulative sums plus the value they had when the window's story begins
(a node's counters count since boot); cAdvisor's restart from zero when the trainer's container
restarts. Gauges are sampled. Node-level series add what the node's neighbours do, which the pod's
own cgroup (cAdvisor, the collector) never sees. Where each kind of read shows follows
TELEMETRY.md: block reads in node_disk_* and the cgroup's io.stat; NFS reads only as the node's
network bytes with iowait; object-store reads as the pod's own network bytes with no iowait; RDMA
only in node_infiniband_*.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyak.dcgm import down_mask
from bottleneck_operator_dev.familyak.hardware import GB, STORAGE_GBS, Storage
from bottleneck_operator_dev.familyak.series import FloatArray, Series, counter, gauge, ratio
from bottleneck_operator_dev.familyak.spec import JobSpec, Telemetry
from bottleneck_operator_dev.familyak.trace import Trace

COLLECTOR_WINDOW_S = 5.0  # the collector reads its process states every 5 s (contract names.COLLECTOR_PERIOD)


class Neighbours:
    """What other pods on each node do: slowly wandering rates, integrated for the node's counters."""

    def __init__(self, spec: JobSpec, trace: Trace, rng: np.random.Generator) -> None:
        h, pods = spec.host, trace.pods
        self.grid = np.arange(trace.edges[0] - 10.0, trace.edges[-1] + 20.0, 10.0)
        walk = np.cumsum(rng.normal(0.0, 0.08, size=(pods, self.grid.size)), axis=1)
        self.factor = np.exp(walk - walk.mean(axis=1, keepdims=True))
        busy = 1.0 if h.neighbours else 0.0
        self.rates = {
            "cpu": np.full((pods, 1), h.neighbour_cpus),
            "disk": busy * rng.uniform(0.0, 2e8, size=(pods, 1)),
            "net": 2e6 + busy * rng.uniform(0.0, 3e8, size=(pods, 1)),
            "io": busy * rng.uniform(0.0, 0.2, size=(pods, 1)),
            "mem": h.node_mem * (0.04 + busy * rng.uniform(0.0, 0.4, size=(pods, 1))),
        }

    def cum(self, name: str, t: FloatArray) -> FloatArray:
        """(pods, len(t)) seconds-integrated rate since the grid's start."""
        r = self.rates[name] * self.factor
        c = np.concatenate([np.zeros((r.shape[0], 1)), np.cumsum((r[:, 1:] + r[:, :-1]) / 2 * 10.0, axis=1)], axis=1)
        return np.stack([np.interp(t, self.grid, c[p]) for p in range(r.shape[0])])

    def integrate(self, rate: FloatArray, t: FloatArray) -> FloatArray:
        """(pods, len(t)) the integral of a (pods, grid) rate from the grid's start."""
        c = np.concatenate(
            [np.zeros((rate.shape[0], 1)), np.cumsum((rate[:, 1:] + rate[:, :-1]) / 2 * 10.0, axis=1)], axis=1
        )
        return np.stack([np.interp(t, self.grid, c[p]) for p in range(rate.shape[0])])

    def level(self, name: str, t: FloatArray) -> FloatArray:
        r = self.rates[name] * self.factor
        return np.stack([np.interp(t, self.grid, r[p]) for p in range(r.shape[0])])


def since_start(trace: Trace, t: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(seconds since the trainer's container started, its start time), for each time in ``t``."""
    start = np.full_like(t, trace.edges[0])
    for p in trace.restarts():
        start = np.where(t >= p.at + p.seconds, p.at + p.seconds, start)
    return t - start, start


def _restarted(trace: Trace, name: str, t: FloatArray) -> FloatArray:
    """A cAdvisor counter: what the current container has accumulated (0 from each restart on)."""
    _, start = since_start(trace, t)
    return trace.cum(name, t) - trace.cum(name, start)


def anon_bytes(spec: JobSpec, trace: Trace, t: FloatArray) -> FloatArray:
    """(pods, len(t)) the trainer's anonymous memory: fixed, plus growth since the container started."""
    h = spec.host
    base = h.anon_base + spec.gpus * spec.loader.workers * h.worker_rss
    age, _ = since_start(trace, t)
    anon = base + h.growth_bps * age
    if h.mem_limit is not None and not h.swap:
        anon = np.minimum(anon, 0.995 * h.mem_limit)
    return np.repeat((anon * (1.0 - down_mask(trace, t)))[None, :], trace.pods, axis=0)


def render_cadvisor(spec: JobSpec, trace: Trace, t: FloatArray) -> dict[str, Series]:
    """kubelet/cAdvisor: the trainer container's CPU, CFS periods, block reads and working set."""
    resets = tuple(p.at + p.seconds for p in trace.restarts())  # the new container counts from zero
    anon = anon_bytes(spec, trace, t)
    limit = spec.host.mem_limit
    resident = anon if limit is None else np.minimum(anon, 0.98 * limit)
    cache = 0.2 * np.minimum(trace.average("disk", t, 60.0) * 60.0, 4 * GB)
    ws = resident + cache
    ws[:, down_mask(trace, t) > 0] = np.nan  # no container, no series
    out = {
        "cpu_cores": counter(_restarted(trace, "cpu", t), resets),
        "fs_read_bps": counter(_restarted(trace, "disk", t), resets),
        "mem_working_set_bytes": gauge(ws),
    }
    if spec.host.cpu_limit is not None:
        out["cpu_throttled_frac"] = ratio(_restarted(trace, "throttled", t), _restarted(trace, "periods", t), resets)
    return out


def render_limits(spec: JobSpec, pods: int, t: FloatArray, ksm: bool) -> dict[str, Series]:
    """The pod's limits (kube-state-metrics, else the collector's memory.max): absent or NaN when unset."""
    out = {"mem_limit_bytes": gauge(np.full((pods, t.size), spec.host.mem_limit or np.nan))}
    if ksm and spec.host.cpu_limit is not None:
        out["cpu_limit_cores"] = gauge(np.full((pods, t.size), spec.host.cpu_limit))
    return out


def _node_cpu(spec: JobSpec, trace: Trace, nb: Neighbours, t: FloatArray, base: FloatArray) -> dict[str, Series]:
    """node_cpu_seconds_total by mode, summed over CPUs: busy, iowait and system against all modes."""
    n = float(spec.host.node_cpus)
    g = nb.grid
    pod = trace.average("cpu", g, 10.0)
    busy_rate = np.minimum(0.995 * n, pod + nb.level("cpu", g))  # a node has only so many CPUs
    # a reader blocked on I/O leaves its CPU idle: that idle time counts as iowait
    wait_rate = np.minimum(n - busy_rate, 0.8 * trace.average("d_state", g, 10.0) + 0.5 * nb.level("io", g))
    busy, iowait = nb.integrate(busy_rate, t), nb.integrate(wait_rate, t)
    system = nb.integrate(np.minimum(busy_rate, trace.average("system", g, 10.0) + 0.1 * nb.level("cpu", g)), t)
    total = n * (t - t[0])[None, :] + np.zeros_like(busy)
    return {
        "node_cpus": gauge(np.full_like(busy, n)),
        "node_cpu_busy_frac": ratio(base * 0.3 + busy, base + total),
        "node_cpu_iowait_frac": ratio(base * 0.01 + iowait, base + total),
        "node_cpu_system_frac": ratio(base * 0.05 + system, base + total),
    }


def _node_memory(spec: JobSpec, trace: Trace, nb: Neighbours, t: FloatArray, swap_total: float) -> dict[str, Series]:
    h = spec.host
    anon = anon_bytes(spec, trace, t)
    limit = h.mem_limit
    resident = anon if limit is None else np.minimum(anon, 0.98 * limit)
    avail = np.clip(h.node_mem - resident - nb.level("mem", t), 0.02 * h.node_mem, None) / h.node_mem
    swapped = np.zeros_like(anon) if limit is None or not h.swap else np.maximum(0.0, anon - 0.98 * limit)
    used = np.clip((swapped + 0.01 * swap_total) / swap_total, 0.0, 1.0) if swap_total else np.zeros_like(anon)
    return {"node_mem_avail_frac": gauge(avail), "node_swap_used_frac": gauge(used)}


def render_node(
    spec: JobSpec, tel: Telemetry, trace: Trace, t: FloatArray, rng: np.random.Generator
) -> dict[str, Series]:
    """node-exporter on each pod's node."""
    nb = Neighbours(spec, trace, rng)
    pods = trace.pods
    base = rng.uniform(1e5, 1e7, size=(pods, 1))  # counters count since the node booted
    ld = spec.loader
    device_gbs = ld.storage_gbs if ld.storage.local else STORAGE_GBS[Storage.NVME][0]
    disk = trace.cum("disk", t) + nb.cum("disk", t)
    # the busiest device: the pod's dataset disk, else the node's own disk the neighbours use
    busy_s = trace.cum("disk_busy", t) if ld.storage.local else 0.5 * nb.cum("disk", t) / (device_gbs * GB)
    storage_rx = trace.cum("nfs", t) + trace.cum("http", t)
    out = {
        "node_disk_read_bps": counter(base * 1e3 + disk),
        "node_disk_reads_ps": counter(base * 10 + trace.cum("disk_ops", t) + nb.cum("disk", t) / 65536.0),
        "node_disk_busy_frac": counter(base * 0.05 + busy_s),
        "node_majfault_ps": counter(base * 3 + trace.cum("majfaults", t)),
        "node_net_rx_bps": counter(base * 1e4 + storage_rx + trace.cum("tcp", t) + nb.cum("net", t)),
        "node_net_tx_bps": counter(base * 1e4 + 0.02 * storage_rx + trace.cum("tcp", t) + 0.5 * nb.cum("net", t)),
    }
    out.update(_node_cpu(spec, trace, nb, t, base))
    swap_total = float(rng.choice([8.0, 16.0, 64.0])) * GB if spec.host.swap else 0.0
    out.update(_node_memory(spec, trace, nb, t, swap_total))
    if tel.node_psi:
        io = trace.cum("io_some", t) + nb.cum("io", t)
        out.update(
            {
                "node_psi_cpu_some": counter(base * 1e-3 + 0.5 * trace.cum("cpu_wait", t) + 0.02 * nb.cum("cpu", t)),
                "node_psi_io_some": counter(base * 1e-3 + io),
                "node_psi_io_full": counter(base * 1e-4 + trace.cum("io_full", t)),
                "node_psi_mem_some": counter(base * 1e-4 + trace.cum("mem_some", t)),
                "node_psi_mem_full": counter(base * 1e-5 + trace.cum("mem_full", t)),
            }
        )
    if tel.node_ib and spec.fabric.rdma:
        out["ib_rx_bps"] = counter(base * 1e5 + trace.cum("ib", t))
        out["ib_tx_bps"] = counter(base * 1e5 + trace.cum("ib", t))
    return out


def render_sidecar(spec: JobSpec, tel: Telemetry, trace: Trace, t: FloatArray) -> dict[str, Series]:
    """The collector: the pod's own cgroup (pressure, CPU, block reads, faults, OOM kills) and processes."""
    w = COLLECTOR_WINDOW_S
    out = {
        "sc_psi_cpu_some": counter(trace.cum("cpu_wait", t)),
        "sc_psi_io_some": counter(trace.cum("io_some", t)),
        "sc_psi_io_full": counter(trace.cum("io_full", t)),
        "sc_psi_mem_some": counter(trace.cum("mem_some", t)),
        "sc_psi_mem_full": counter(trace.cum("mem_full", t)),
        "sc_cpu_cores": counter(trace.cum("cpu", t)),
        # without a quota cpu.stat counts no periods: 0 over 0, no value
        "sc_throttled_frac": ratio(trace.cum("throttled", t), trace.cum("periods", t)),
        "sc_io_read_bps": counter(trace.cum("disk", t)),
        "sc_majfault_ps": counter(trace.cum("majfaults", t)),
        "sc_swapin_ps": counter(trace.cum("swapins", t)),
        "sc_oom_kills": counter(trace.cum("oom_kills", t)),
        "sc_procs_running": gauge(np.round(trace.average("cpu", t, w) + trace.average("cpu_wait", t, w))),
        "sc_procs_iowait": gauge(np.round(trace.average("d_state", t, w))),
        "sc_procs_busy": gauge(np.round(trace.average("busy_procs", t, w))),
    }
    if tel.sidecar_net:
        out["sc_net_rx_bps"] = counter(trace.cum("http", t) + trace.cum("tcp", t))
        out["sc_net_tx_bps"] = counter(0.02 * trace.cum("http", t) + trace.cum("tcp", t))
    return out
