"""The collector's series: each :class:`~bottleneck_operator.sidecar.reader.Snapshot` exposed by
:class:`SnapshotCollector` in Prometheus's text format, under :data:`PREFIX`.

A reading the snapshot lacks is left out of the exposition rather than written as zero, so that an
absent file reads as absent in Prometheus too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bottleneck_operator import __version__
from bottleneck_operator.sidecar.gpu import GpuReading
from bottleneck_operator.sidecar.netdev import NetBytes
from bottleneck_operator.sidecar.reader import Identity, Snapshot

log = logging.getLogger(__name__)

PREFIX = "bottleneck_sidecar_"


class SnapshotCollector(Collector):
    """Exposes the latest :class:`Snapshot` in the fixed ``bottleneck_sidecar_*`` names.

    Every series carries ``namespace``, ``pod`` and ``node``; the PodMonitor keeps them (honorLabels).
    """

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.latest = Snapshot()
        self._base = ["namespace", "pod", "node"]
        self._values = [identity.namespace, identity.pod, identity.node]

    def update(self, snapshot: Snapshot) -> None:
        # One reference assignment: scrapes in the server thread see the old or the new snapshot whole.
        self.latest = snapshot

    def _counter(self, name: str, doc: str, value: float | None) -> Metric | None:
        if value is None:
            return None
        family = CounterMetricFamily(PREFIX + name, doc, labels=self._base)
        family.add_metric(self._values, value)
        return family

    def _gauge(self, name: str, doc: str, value: float | None) -> Metric | None:
        if value is None:
            return None
        family = GaugeMetricFamily(PREFIX + name, doc, labels=self._base)
        family.add_metric(self._values, value)
        return family

    def collect(self) -> Iterator[Metric]:
        snap = self.latest
        yield from self._cgroup_metrics(snap)
        if snap.processes is not None:
            procs = GaugeMetricFamily(
                PREFIX + "processes",
                "Workload processes by state (R running, D iowait, S sleeping).",
                labels=[*self._base, "state"],
            )
            procs.add_metric([*self._values, "running"], snap.processes.running)
            procs.add_metric([*self._values, "iowait"], snap.processes.iowait)
            procs.add_metric([*self._values, "sleeping"], snap.processes.sleeping)
            yield procs
        doc = "Workload processes that used at least 0.9 of a CPU core since the previous reading."
        yield from filter(None, [self._gauge("busy_processes", doc, snap.busy_processes)])
        if snap.network is not None:
            yield from filter(None, self._network_metrics(snap.network))
        if snap.gpus:
            yield from self._gpu_metrics(snap.gpus)
        info = GaugeMetricFamily(
            PREFIX + "info",
            "Where the collector reads from, and its version.",
            labels=[*self._base, "source", "version"],
        )
        info.add_metric([*self._values, snap.source, __version__], 1.0)
        yield info

    def _cgroup_metrics(self, snap: Snapshot) -> Iterator[Metric]:
        candidates = [*self._cpu_metrics(snap), *self._io_memory_metrics(snap)]
        yield from (m for m in candidates if m is not None)
        if snap.pressure:
            yield from self._pressure_metrics(snap.pressure)

    def _cpu_metrics(self, snap: Snapshot) -> list[Metric | None]:
        cpu = snap.cpu
        usec = 1e-6
        candidates: list[Metric | None] = [
            self._counter(
                "cpu_usage_seconds", "Pod cgroup CPU time (cpu.stat usage_usec).", _scaled(cpu.get("usage_usec"), usec)
            ),
        ]
        # Periods and throttling mean something only under a CPU limit (cAdvisor does the same).
        if "nr_periods" in cpu and (snap.cpu_has_limit or cpu.get("nr_periods", 0) > 0):
            candidates += [
                self._counter("cpu_periods", "CFS enforcement periods (cpu.stat nr_periods).", cpu.get("nr_periods")),
                self._counter(
                    "cpu_throttled_periods", "Periods throttled (cpu.stat nr_throttled).", cpu.get("nr_throttled")
                ),
                self._counter(
                    "cpu_throttled_seconds",
                    "Time throttled (cpu.stat throttled_usec).",
                    _scaled(cpu.get("throttled_usec"), usec),
                ),
            ]
        candidates.append(
            self._gauge("cpu_limit_cores", "CPU limit of the pod cgroup (cpu.max quota/period).", snap.cpu_limit_cores)
        )
        return candidates

    def _io_memory_metrics(self, snap: Snapshot) -> list[Metric | None]:
        return [
            self._counter(
                "io_read_bytes", "Bytes read from block devices (io.stat rbytes).", _f(snap.io.get("rbytes"))
            ),
            self._counter(
                "io_write_bytes", "Bytes written to block devices (io.stat wbytes).", _f(snap.io.get("wbytes"))
            ),
            self._counter("io_reads", "Read operations on block devices (io.stat rios).", _f(snap.io.get("rios"))),
            self._gauge(
                "memory_current_bytes", "Memory charged to the pod cgroup (memory.current).", _f(snap.memory_current)
            ),
            self._gauge("memory_max_bytes", "Memory limit of the pod cgroup (memory.max).", _f(snap.memory_max)),
            self._counter(
                "memory_major_faults",
                "Major page faults (memory.stat pgmajfault).",
                _f(snap.memory_stat.get("pgmajfault")),
            ),
            # pswpin is in memory.stat only on kernels that count swap per cgroup: absent elsewhere.
            self._counter(
                "memory_swapins",
                "Pages read back from swap (memory.stat pswpin).",
                _f(snap.memory_stat.get("pswpin")),
            ),
            self._counter(
                "memory_oom_kills",
                "Processes killed by the OOM killer (memory.events oom_kill).",
                _f(snap.memory_events.get("oom_kill")),
            ),
        ]

    def _network_metrics(self, net: NetBytes) -> list[Metric | None]:
        doc = "Bytes the pod's own interfaces {} (/proc/net/dev of its network namespace, lo left out)."
        return [
            self._counter("network_receive_bytes", doc.format("received"), float(net.received)),
            self._counter("network_transmit_bytes", doc.format("sent"), float(net.sent)),
        ]

    def _pressure_metrics(self, pressure: dict[str, dict[str, float]]) -> Iterator[Metric]:
        waiting = CounterMetricFamily(
            PREFIX + "pressure_waiting_seconds",
            "PSI 'some': time some tasks waited on the resource.",
            labels=[*self._base, "resource"],
        )
        stalled = CounterMetricFamily(
            PREFIX + "pressure_stalled_seconds",
            "PSI 'full': time all tasks stalled on the resource.",
            labels=[*self._base, "resource"],
        )
        for resource, psi in sorted(pressure.items()):
            if "some" in psi:
                waiting.add_metric([*self._values, resource], psi["some"])
            if "full" in psi:
                stalled.add_metric([*self._values, resource], psi["full"])
        yield from (m for m in (waiting, stalled) if m.samples)

    def _gpu_metrics(self, gpus: list[GpuReading]) -> Iterator[Metric]:
        labels = [*self._base, "gpu", "UUID"]
        util = GaugeMetricFamily(
            PREFIX + "gpu_utilization_ratio", "NVML GPU utilisation (share of time a kernel ran).", labels=labels
        )
        used = GaugeMetricFamily(PREFIX + "gpu_memory_used_bytes", "NVML framebuffer memory used.", labels=labels)
        total = GaugeMetricFamily(PREFIX + "gpu_memory_total_bytes", "NVML framebuffer memory size.", labels=labels)
        for g in gpus:
            values = [*self._values, g.index, g.uuid]
            util.add_metric(values, g.utilization_ratio)
            used.add_metric(values, g.memory_used_bytes)
            total.add_metric(values, g.memory_total_bytes)
        yield from (util, used, total)


def _f(value: int | None) -> float | None:
    return None if value is None else float(value)


def _scaled(value: int | None, factor: float) -> float | None:
    return None if value is None else value * factor
