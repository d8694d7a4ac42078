"""The series each exporter would publish for a job, with the exporters' own names, labels and units.

dcgm-exporter: see :mod:`.dcgm`.
node-exporter: ``node_cpu_seconds_total`` per cpu and mode, disks and interfaces by ``device``, PSI only
on kernels >= 4.20, InfiniBand/RoCE port counters by ``device`` and ``port`` where the node has adapters
and the collector is on; the scrape adds ``instance`` (ip:9100), mapped to the node by ``node_uname_info``.
cAdvisor: per container plus the pod-level cgroup (``container=""``); CFS series only with a CPU limit;
``container_spec_memory_limit_bytes`` is 0 without a limit; fs reads count block devices only.
kube-state-metrics: ``kube_pod_info`` and ``kube_pod_container_resource_limits``. The collector sidecar:
``bottleneck_sidecar_*`` with namespace, pod, node.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from bottleneck_operator import __version__
from bottleneck_operator.contract.names import COLLECTOR_METRIC_PREFIX
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.dcgm import TRAINER, dcgm_fields, dcgm_series
from bottleneck_operator_dev.simulation.series import Series, SeriesMaker, series_maker, table_metric
from bottleneck_operator_dev.simulation.state import CPU_MODES, F

_m = table_metric  # every series below is named through the signal table


def _sc(signal: str, index: int = 0) -> str:
    return table_metric(signal, index, strip=COLLECTOR_METRIC_PREFIX)


if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.record import JobRecord

SIDECAR = "bottleneck-collector"
SIDECAR_CPU_LIMIT = 0.05  # the chart's default collector limits (Settings.sidecar_cpu_limit / memory)
SIDECAR_MEM_LIMIT = 64 * cat.MIB


def node_series(job: JobRecord) -> Iterator[Series]:
    """node-exporter's series for each of the job's nodes.

    Args:
        job: the job.

    Yields:
        Series (per-CPU/mode CPU time, disks, memory, network, PSI when present, uname).
    """
    st = job.state
    sc = job.params
    storage = cat.STORAGE_KINDS[sc.storage]
    devices = ["nvme0n1"] if storage.network else ["nvme0n1", storage.device]
    rng = np.random.default_rng([sc.seed, 11])
    for j, nd in enumerate(job.nodes):
        up = st.up["node"][j]
        scrape = {"instance": nd.instance, "job": "node-exporter"}

        s = series_maker("node", up, scrape, {})

        yield s("node_uname_info", "gauge", "Labeled system information as provided by the uname system call.",
                np.ones(st.t.size), {"domainname": "(none)", "machine": "x86_64", "nodename": nd.name,
                                     "release": "5.15.0-1056-aws", "sysname": "Linux",
                                     "version": "#61~20.04.1-Ubuntu SMP"})  # fmt: skip
        yield from _node_cpu(s, st.node["cpu_c"][j], nd.cpus, rng)
        yield from _node_disk_memory(s, job, j, devices)
        yield from _node_network_psi(s, job, j)


def _node_cpu(s: SeriesMaker, cpu_total: F, ncpu: int, rng: np.random.Generator) -> Iterator[Series]:
    """Per CPU: the node's mode totals (modes, n) split over its CPUs with a little imbalance."""
    weights = 1 + rng.normal(0, 0.05, (ncpu, len(CPU_MODES), 1))
    weights /= weights.mean(axis=0, keepdims=True)
    per_cpu = cpu_total[None] / ncpu * weights
    for c in range(ncpu):
        for m, mode in enumerate(CPU_MODES):
            yield s(_m("node_cpus"), "counter", "Seconds the CPUs spent in each mode.",
                    per_cpu[c, m], {"cpu": str(c), "mode": mode})  # fmt: skip


def _node_disk_memory(s: SeriesMaker, job: JobRecord, j: int, devices: list[str]) -> Iterator[Series]:
    st = job.state
    for d, dev in enumerate(devices):
        lab = {"device": dev}
        yield s(_m("node_disk_read_bps"), "counter", "The total number of bytes read successfully.",
                st.node["disk_read_c"][j, d], lab)  # fmt: skip
        yield s(_m("node_disk_reads_ps"), "counter", "The total number of reads completed successfully.",
                st.node["disk_reads_c"][j, d], lab)  # fmt: skip
        yield s(_m("node_disk_busy_frac"), "counter", "Total seconds spent doing I/Os.",
                st.node["disk_io_time_c"][j, d], lab)  # fmt: skip
    mem = {
        _m("node_mem_avail_frac"): "mem_avail", _m("node_mem_avail_frac", 1): "mem_total",
        _m("node_swap_used_frac", 1): "swap_total", _m("node_swap_used_frac"): "swap_free",
    }  # fmt: skip
    for name, key in mem.items():
        yield s(name, "gauge", f"Memory information field {name[12:]}.", st.node[key][j])
    yield s(_m("node_majfault_ps"), "unknown", "/proc/vmstat information field pgmajfault.", st.node["majfault_c"][j])


def _node_network_psi(s: SeriesMaker, job: JobRecord, j: int) -> Iterator[Series]:
    st = job.state
    sc = job.params
    lo = np.cumsum(np.full(st.t.size, 3e4 * sc.scrape_interval)) + 1e9
    for name, key, signal in (("receive", "net_rx_c", "node_net_rx_bps"), ("transmit", "net_tx_c", "node_net_tx_bps")):
        text = f"Network device statistic {name}_bytes."
        yield s(_m(signal), "counter", text, st.node[key][j], {"device": "eth0"})
        yield s(_m(signal), "counter", text, lo, {"device": "lo"})
    if sc.env.node_psi:
        psi = (
            (_m("node_psi_cpu_some"), "psi_cpu_some_c", "CPU"),
            (_m("node_psi_io_some"), "psi_io_some_c", "IO"),
            (_m("node_psi_io_full"), "psi_io_full_c", "IO"),
            (_m("node_psi_mem_some"), "psi_mem_some_c", "memory"),
            (_m("node_psi_mem_full"), "psi_mem_full_c", "memory"),
        )
        for name, key, what in psi:
            yield s(name, "counter", f"Total time in seconds that processes have waited for {what}.", st.node[key][j])
    yield from _node_infiniband(s, job, j)


def _node_infiniband(s: SeriesMaker, job: JobRecord, j: int) -> Iterator[Series]:
    """The infiniband collector's port counters: one HCA (``mlx5_<k>``) per port, as rail-optimised nodes have."""
    st = job.state
    for port in range(job.params.env.ib_ports):
        lab = {"device": f"mlx5_{port}", "port": "1"}
        yield s(_m("ib_rx_bps"), "counter",
                "Number of data octets received on all links", st.node["ib_rx_c"][j, port], lab)  # fmt: skip
        yield s(_m("ib_tx_bps"), "counter",
                "Number of data octets transmitted on all links", st.node["ib_tx_c"][j, port], lab)  # fmt: skip


def _cgroup(pod_uid: str, burstable: bool) -> str:
    qos = "burstable" if burstable else "besteffort"
    return f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{pod_uid.replace('-', '_')}.slice"


def cadvisor_series(job: JobRecord) -> Iterator[Series]:
    """cAdvisor's series for the job's containers, pod cgroups and the neighbours' containers.

    Args:
        job: the job.

    Yields:
        Series.
    """
    node_ip = {nd.name: nd.ip for nd in job.nodes}
    storage = cat.STORAGE_KINDS[job.params.storage]
    dev = "/dev/nvme0n1" if storage.network else f"/dev/{storage.device}"
    for p, pod in enumerate(job.pods):
        scrape = {"instance": f"{node_ip[pod.node]}:10250", "job": "kubelet", "metrics_path": "/metrics/cadvisor"}
        yield from _pod_cadvisor(job, p, scrape, dev)
    yield from _neighbour_cadvisor(job)


def _pod_cadvisor(job: JobRecord, p: int, scrape: dict[str, str], dev: str) -> Iterator[Series]:
    """One pod's containers (trainer, collector when injected) and its pod-level cgroup."""
    st = job.state
    sc = job.params
    pod = job.pods[p]
    n = st.t.size
    pod_id = _cgroup(pod.uid, True)
    base = {"namespace": job.namespace, "pod": pod.pod}
    cid = f"{zlib.crc32(pod.pod.encode()):08x}" * 8
    trainer = {**base, "container": TRAINER, "id": f"{pod_id}/cri-containerd-{cid}.scope",
               "image": "registry.example.com/ml/trainer:2.3", "name": cid}  # fmt: skip
    containers = [(trainer, st.pod["cpu_c"][p], st.pod["ws"][p], st.pod["mem_limit"][p], sc.cpu_limit)]
    if sc.env.sidecar:
        sid = f"{zlib.crc32(pod.pod.encode()) ^ 0x5A5A5A5A:08x}" * 8
        side = {**base, "container": SIDECAR, "id": f"{pod_id}/cri-containerd-{sid}.scope",
                "image": f"ghcr.io/bottleneck-dev/bottleneck-operator:{__version__}", "name": sid}  # fmt: skip
        containers.append((side, st.pod["cpu_sc_c"][p], np.full(n, 18 * cat.MIB), np.full(n, SIDECAR_MEM_LIMIT),
                           SIDECAR_CPU_LIMIT))  # fmt: skip
    pod_level = {**base, "container": "", "id": pod_id, "image": "", "name": ""}
    cpu_sum = sum(c[1] for c in containers)
    ws_sum = sum(c[2] for c in containers)
    for labels, cpu, ws, limit, cpu_limit in [*containers, (pod_level, cpu_sum, ws_sum, np.zeros(n), None)]:
        s = series_maker("cadvisor", up=st.up["cadvisor"], scrape=scrape, base=labels)

        yield s(_m("cpu_cores"), "counter", "Cumulative cpu time consumed in seconds.", cpu)
        yield s(_m("mem_working_set_bytes"), "gauge", "Current working set in bytes.", ws)
        yield s(_m("mem_limit_bytes"), "gauge", "Memory limit for the container.", limit)
        if labels is trainer:
            yield s(_m("fs_read_bps"), "counter", "Cumulative count of bytes read",
                    st.pod["fs_read_c"][p], {"device": dev})  # fmt: skip
        if cpu_limit is not None:
            yield from _cfs_series(s, job, p if labels is trainer else None, cpu_limit)


def _cfs_series(s: SeriesMaker, job: JobRecord, p: int | None, cpu_limit: float) -> Iterator[Series]:
    """CFS quota and throttling of a limited container: pod ``p``'s trainer, or (None) the collector."""
    st = job.state
    n = st.t.size
    quota = np.full(n, cpu_limit * 100000.0)
    yield s("container_spec_cpu_quota", "gauge", "CPU quota of the container.", quota)
    yield s("container_spec_cpu_period", "gauge", "CPU period of the container.", np.full(n, 100000.0))
    if p is not None:
        periods, thr, thr_s = (st.pod[k][p] for k in ("cfs_periods_c", "cfs_throttled_c", "cfs_throttled_s_c"))
    else:  # the collector: quiet, seldom throttled
        periods = np.cumsum(np.full(n, 10.0 * 0.3 * job.params.scrape_interval))
        thr, thr_s = periods * 0.002, periods * 1e-5
    yield s(_m("cpu_throttled_frac", 1), "counter", "Number of elapsed enforcement period intervals.", periods)
    yield s(_m("cpu_throttled_frac"), "counter", "Number of throttled period intervals.", thr)
    yield s("container_cpu_cfs_throttled_seconds_total", "counter", "Total time duration the container has been throttled.", thr_s)  # fmt: skip


def _neighbour_cadvisor(job: JobRecord) -> Iterator[Series]:
    """Neighbour pods of other jobs on the same nodes (not profiled, but visible on the node)."""
    st = job.state
    up = st.up["cadvisor"]
    for j, nd in enumerate(job.nodes):
        scrape = {"instance": f"{nd.ip}:10250", "job": "kubelet", "metrics_path": "/metrics/cadvisor"}
        for k, (ns, pod_name, _job) in enumerate(job.neighbours[j] if job.neighbours else ()):
            cid = f"{zlib.crc32(pod_name.encode()):08x}" * 8
            labels = {"namespace": ns, "pod": pod_name, "container": "worker",
                      "id": f"/kubepods.slice/kubepods-besteffort.slice/{cid}", "image": "busybox", "name": cid}  # fmt: skip
            yield Series(_m("cpu_cores"), "counter", "Cumulative cpu time consumed in seconds.",
                         labels, st.neighbours["cpu_c"][j, k], "cadvisor", up, scrape)  # fmt: skip
            yield Series(_m("mem_working_set_bytes"), "gauge", "Current working set in bytes.",
                         labels, st.neighbours["ws"][j, k], "cadvisor", up, scrape)  # fmt: skip


def ksm_series(job: JobRecord) -> Iterator[Series]:
    """kube-state-metrics' pod info and resource limits (nothing when the scenario lacks it).

    Args:
        job: the job.

    Yields:
        Series.
    """
    st = job.state
    sc = job.params
    if not sc.env.ksm:
        return
    up = st.up["ksm"]
    scrape = {"instance": "10.0.0.12:8080", "job": "kube-state-metrics"}
    ones = np.ones(st.t.size)
    node_ip = {nd.name: nd.ip for nd in job.nodes}
    info = "Information about pod."
    lim = "The number of requested limit resource by a container."
    for pod in job.pods:
        yield Series("kube_pod_info", "gauge", info, {
            "namespace": job.namespace, "pod": pod.pod, "uid": pod.uid, "node": pod.node, "created_by_kind": "Job",
            "created_by_name": job.name, "host_ip": node_ip[pod.node], "pod_ip": pod.ip, "host_network": "false",
            "priority_class": ""}, ones, "ksm", up, scrape)  # fmt: skip
        base = {"namespace": job.namespace, "pod": pod.pod, "node": pod.node}
        limits: list[tuple[str, str, str, float]] = []
        if sc.cpu_limit is not None:
            limits.append((TRAINER, "cpu", "core", sc.cpu_limit))
        if sc.env.mem_limit_bytes:
            limits.append((TRAINER, "memory", "byte", sc.env.mem_limit_bytes))
        limits.append((TRAINER, "nvidia_com_gpu", "integer", float(pod.gpu_count)))
        if sc.env.sidecar:
            limits += [(SIDECAR, "cpu", "core", SIDECAR_CPU_LIMIT), (SIDECAR, "memory", "byte", SIDECAR_MEM_LIMIT)]
        for container, resource, unit, value in limits:
            labels = {**base, "container": container, "resource": resource, "unit": unit}
            yield Series(_m("cpu_limit_cores"), "gauge", lim, labels, ones * value, "ksm", up, scrape)
    for j, nd in enumerate(job.nodes):
        for ns, pod_name, owner in job.neighbours[j] if job.neighbours else ():
            yield Series("kube_pod_info", "gauge", info, {
                "namespace": ns, "pod": pod_name, "uid": f"{zlib.crc32(pod_name.encode()):08x}-0000-4000-8000-000000000000",
                "node": nd.name, "created_by_kind": "Job", "created_by_name": owner, "host_ip": nd.ip,
                "pod_ip": f"10.244.{j % 250}.{(zlib.crc32(pod_name.encode()) % 250) + 1}", "host_network": "false",
                "priority_class": ""}, ones, "ksm", up, scrape)  # fmt: skip


SIDECAR_PSI = (("cpu", "psi_cpu_some_c", "psi_cpu_full_c"), ("io", "psi_io_some_c", "psi_io_full_c"),
               ("memory", "psi_mem_some_c", "psi_mem_full_c"))  # fmt: skip


def kubelet_psi_series(job: JobRecord) -> Iterator[Series]:
    """The kubelet's per-cgroup PSI (cAdvisor's ``container_pressure_*``, KubeletPSI: Kubernetes >= 1.34).

    The pod-level cgroup (``container=""``) carries the pressure the collector reads from the pod's
    cgroup; the trainer's container the same (it is the pod's only busy process). Not part of
    :data:`EXPORTER_SERIES`: older clusters have none, and the ``kube-prometheus-stack`` layout
    (:mod:`.layouts`) adds them.

    Args:
        job: the job.

    Yields:
        Series, waiting (some) and stalled (full) seconds per resource.
    """
    st = job.state
    node_ip = {nd.name: nd.ip for nd in job.nodes}
    for p, pod in enumerate(job.pods):
        scrape = {"instance": f"{node_ip[pod.node]}:10250", "job": "kubelet", "metrics_path": "/metrics/cadvisor"}
        pod_id = _cgroup(pod.uid, True)
        cid = f"{zlib.crc32(pod.pod.encode()):08x}" * 8
        base = {"namespace": job.namespace, "pod": pod.pod}
        cgroups = ({**base, "container": "", "id": pod_id, "image": "", "name": ""},
                   {**base, "container": TRAINER, "id": f"{pod_id}/cri-containerd-{cid}.scope",
                    "image": "registry.example.com/ml/trainer:2.3", "name": cid})  # fmt: skip
        for labels in cgroups:
            s = series_maker("cadvisor", up=st.up["cadvisor"], scrape=scrape, base=labels)
            for res, some, full in SIDECAR_PSI:
                what = f"due to {res} congestion" if res != "cpu" else "for CPU"
                yield s(f"container_pressure_{res}_waiting_seconds_total", "counter",
                        f"Total time duration tasks in the container have waited {what}.", st.pod[some][p])  # fmt: skip
                yield s(f"container_pressure_{res}_stalled_seconds_total", "counter",
                        f"Total time duration no tasks in the container could make progress {what}.", st.pod[full][p])  # fmt: skip


def counts_busy_processes(job_name: str) -> bool:
    """Whether the job's collector reports its busy processes.

    A quarter of jobs run an earlier collector without them (a cluster part-way through an upgrade),
    so that a model learns to read the rest without them. Keyed on the name rather than drawn, so
    that every other draw stays as it was.
    """
    return zlib.crc32(job_name.encode()) % 4 != 0


def sidecar_series(job: JobRecord) -> Iterator[Series]:
    """The collector sidecar's series for each pod (nothing when the scenario has no sidecar).

    Args:
        job: the job.

    Yields:
        Series named as the sidecar metric contract fixes them.
    """
    st = job.state
    sc = job.params
    if not sc.env.sidecar:
        return
    up = st.up["sidecar"]
    n = st.t.size
    for p, pod in enumerate(job.pods):
        base = {"namespace": job.namespace, "pod": pod.pod, "node": pod.node}
        scrape = {"instance": f"{pod.ip}:9105", "job": "bottleneck-collector"}
        s = series_maker("sidecar", up, scrape, base, prefix=COLLECTOR_METRIC_PREFIX)

        yield s("info", "gauge", "The collector's data source and version.", np.ones(n),
                {"source": "cgroup2", "version": __version__})  # fmt: skip
        yield s(_sc("sc_cpu_cores"), "counter", "Pod cgroup CPU time.", st.pod["cpu_c"][p] + st.pod["cpu_sc_c"][p])
        if sc.cpu_limit is not None:
            yield s(_sc("sc_throttled_frac", 1), "counter", "cpu.stat nr_periods.", st.pod["cfs_periods_c"][p])
            yield s(_sc("sc_throttled_frac"), "counter", "cpu.stat nr_throttled.", st.pod["cfs_throttled_c"][p])
            yield s(
                "cpu_throttled_seconds_total", "counter", "cpu.stat throttled_usec.", st.pod["cfs_throttled_s_c"][p]
            )
        for res, some, _ in SIDECAR_PSI:
            yield s(_sc("sc_psi_cpu_some"), "counter", "PSI some total.", st.pod[some][p], {"resource": res})
        for res, _, full in SIDECAR_PSI:
            yield s(_sc("sc_psi_io_full"), "counter", "PSI full total.", st.pod[full][p], {"resource": res})
        yield s(_sc("sc_io_read_bps"), "counter", "io.stat rbytes.", st.pod["fs_read_c"][p])
        yield s("io_write_bytes_total", "counter", "io.stat wbytes.", st.pod["fs_read_c"][p] * 0.02)
        yield s("io_reads_total", "counter", "io.stat rios.", st.pod["fs_reads_c"][p])
        yield s(_sc("sc_net_rx_bps"), "counter", "/proc/net/dev rx bytes, lo left out.", st.pod["net_rx_c"][p])
        yield s(_sc("sc_net_tx_bps"), "counter", "/proc/net/dev tx bytes, lo left out.", st.pod["net_tx_c"][p])
        yield s("memory_current_bytes", "gauge", "memory.current.", st.pod["mem_current"][p])
        if sc.env.mem_limit_bytes:
            yield s(
                _sc("mem_limit_bytes", 2),
                "gauge",
                "memory.max.",
                np.full(n, sc.env.mem_limit_bytes + SIDECAR_MEM_LIMIT),
            )
        yield s(_sc("sc_majfault_ps"), "counter", "memory.stat pgmajfault.", st.pod["majfault_c"][p])
        if sc.env.swapins_counted:  # kernels >= 6.15 count swap-ins per cgroup
            yield s(_sc("sc_swapin_ps"), "counter", "memory.stat pswpin.", st.pod["swapin_c"][p])
        yield s(_sc("sc_oom_kills"), "counter", "memory.events oom_kill.", st.pod["oom_c"][p])
        for state, key in (("running", "procs_running"), ("iowait", "procs_iowait"), ("sleeping", "procs_sleeping")):
            yield s(_sc("sc_procs_running"), "gauge", "Trainer processes by state.", st.pod[key][p], {"state": state})
        if counts_busy_processes(job.name):
            yield s(_sc("sc_procs_busy"), "gauge", "Processes at a full core.", st.pod["procs_busy"][p])


EXPORTER_SERIES = {
    "dcgm": dcgm_series,
    "node": node_series,
    "cadvisor": cadvisor_series,
    "ksm": ksm_series,
    "sidecar": sidecar_series,
}


def job_series(job: JobRecord, *, extra_pods: bool = True) -> Iterator[Series]:
    """Every series of one job, exporter by exporter.

    Args:
        job: the job.
        extra_pods: include the neighbour pods of other jobs (dcgm, cAdvisor, kube-state-metrics).

    Yields:
        Series.
    """
    for fn in EXPORTER_SERIES.values():
        for series in fn(job):
            ns = series.labels.get("namespace")
            if not extra_pods and ns and ns != job.namespace and series.exporter in ("dcgm", "cadvisor", "ksm"):
                continue
            yield series


__all__ = ["EXPORTER_SERIES", "Series", "counts_busy_processes", "dcgm_fields", "job_series", "kubelet_psi_series"]
