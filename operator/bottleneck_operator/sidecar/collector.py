"""The collector's readings: one :class:`Snapshot` per period, exposed by :class:`SnapshotCollector`.

A missing or unreadable file leaves its metric out of the snapshot and is logged once for the life
of the process (:class:`OnceLog`), so a pod without, say, a memory controller costs one line and no
retries that spin. The pod's cgroup is found once; when it is missing the search is retried at most
every :data:`REDISCOVER_SECONDS`.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bottleneck_operator import __version__
from bottleneck_operator.sidecar import cgroup
from bottleneck_operator.sidecar.gpu import GpuReading, Nvml
from bottleneck_operator.sidecar.procs import BusyTracker, ProcessCounts, count_states

log = logging.getLogger(__name__)

PREFIX = "bottleneck_sidecar_"
REDISCOVER_SECONDS = 60.0
PRESSURE_RESOURCES = ("cpu", "io", "memory")


class OnceLog:
    """Logs each distinct problem once: a missing file must not write a line every period."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._seen: set[str] = set()

    def warn(self, key: str, message: str, *args: object) -> None:
        if key not in self._seen:
            self._seen.add(key)
            self._logger.warning(message, *args)

    def info(self, key: str, message: str, *args: object) -> None:
        if key not in self._seen:
            self._seen.add(key)
            self._logger.info(message, *args)


@dataclass(frozen=True)
class Identity:
    """The labels every series carries, from the downward API (env POD_NAMESPACE, POD_NAME, NODE_NAME)."""

    namespace: str
    pod: str
    node: str
    pod_uid: str

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Identity:
        env = dict(os.environ) if env is None else env
        host = socket.gethostname()
        return cls(
            namespace=env.get("POD_NAMESPACE", ""),
            pod=env.get("POD_NAME", host),
            node=env.get("NODE_NAME", host),
            pod_uid=env.get("POD_UID", ""),
        )


@dataclass
class Snapshot:
    """Everything read in one period; None or empty means "absent" (the metric is not exposed)."""

    source: str = "none"
    cpu: dict[str, int] = field(default_factory=dict)
    cpu_limit_cores: float | None = None
    cpu_has_limit: bool | None = None
    pressure: dict[str, dict[str, float]] = field(default_factory=dict)
    io: dict[str, int] = field(default_factory=dict)
    memory_current: int | None = None
    memory_max: int | None = None
    memory_stat: dict[str, int] = field(default_factory=dict)
    memory_events: dict[str, int] = field(default_factory=dict)
    processes: ProcessCounts | None = None
    busy_processes: int | None = None  # processes at a full core since the previous reading
    gpus: list[GpuReading] = field(default_factory=list)
    taken_at: float = 0.0


class Reader:
    """Reads the pod's cgroup v2 files, its processes and (optionally) NVML into snapshots.

    Args:
        cgroup_root: where the (host's) cgroup file system is mounted.
        proc_root: the proc file system.
        identity: pod labels and UID.
        cgroup_path: the pod's cgroup directory, skipping the search (tests, unusual layouts).
        processes: read process states (off when the pod shares the host's PID namespace).
        nvml: the NVML reader, or None to skip GPUs.
        clock: monotonic clock (for the rediscovery back-off).
    """

    def __init__(
        self,
        *,
        cgroup_root: Path = Path("/sys/fs/cgroup"),
        proc_root: Path = Path("/proc"),
        identity: Identity | None = None,
        cgroup_path: Path | None = None,
        processes: bool = True,
        nvml: Nvml | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cgroup_root = cgroup_root
        self.proc_root = proc_root
        self.identity = identity or Identity.from_env()
        self.processes = processes
        self.nvml = nvml
        self._clock = clock
        self._fixed_path = cgroup_path
        self._path: Path | None = cgroup_path
        self._last_search = float("-inf")
        self._exclude = frozenset({os.getpid()})
        self.busy = BusyTracker()
        self.once = OnceLog(log)

    # --- locating the cgroup
    @property
    def cgroup_dir(self) -> Path | None:
        """The pod cgroup directory in use, if any."""
        return self._path

    def _locate(self) -> Path | None:
        if self._fixed_path is not None:
            return self._fixed_path
        if self._path is not None and self._path.is_dir():
            return self._path
        now = self._clock()
        if now - self._last_search < REDISCOVER_SECONDS:
            return None
        self._last_search = now
        self._path = None
        v2root = cgroup.unified_root(self.cgroup_root)
        if v2root is None:
            self.once.warn(
                "no-v2",
                "no cgroup v2 hierarchy under %s: pod cgroup metrics are absent (cgroup v1 is not read)",
                self.cgroup_root,
            )
            return None
        if self.identity.pod_uid:
            found = cgroup.find_pod_cgroup(v2root, self.identity.pod_uid)
            if found is None:
                self.once.warn(
                    "no-pod-cgroup",
                    "cgroup of pod %s not found under %s (is the node's /sys/fs/cgroup mounted?): "
                    "pod cgroup metrics are absent",
                    self.identity.pod_uid,
                    v2root,
                )
        else:
            # Outside Kubernetes: report the cgroup this process runs in.
            found = cgroup.own_cgroup(v2root, self.proc_root)
        if found is not None:
            self.once.info(f"found:{found}", "reading cgroup %s", found)
        self._path = found
        return found

    # --- reading
    def _read(self, directory: Path, name: str) -> str | None:
        try:
            return (directory / name).read_text()
        except OSError as exc:
            reason = "missing" if isinstance(exc, FileNotFoundError) else (exc.strerror or type(exc).__name__)
            self.once.warn(f"file:{name}", "%s/%s unreadable (%s): its metrics are absent", directory, name, reason)
            return None

    def _parse(self, directory: Path, name: str, parse: Callable[[str], object]) -> object | None:
        text = self._read(directory, name)
        if text is None:
            return None
        try:
            return parse(text)
        except ValueError as exc:
            self.once.warn(f"parse:{name}", "%s/%s malformed (%s): its metrics are absent", directory, name, exc)
            return None

    def snapshot(self) -> Snapshot:
        """Take one reading of everything visible."""
        snap = Snapshot(taken_at=time.time())
        directory = self._locate()
        if directory is not None:
            self._read_cgroup(directory, snap)
        if self.processes:
            counts = count_states(self.proc_root, self._exclude)
            busy = self.busy.update(counts, self._clock())
            if counts.seen:
                snap.processes, snap.busy_processes = counts, busy
            else:
                self.once.info(
                    "no-procs",
                    "no other process visible in %s (shareProcessNamespace off?): process states are absent",
                    self.proc_root,
                )
        if self.nvml is not None:
            snap.gpus = self.nvml.read()
        if snap.cpu or snap.pressure or snap.memory_current is not None or snap.io:
            snap.source = "cgroup2"
        elif snap.processes is not None:
            snap.source = "proc"
        return snap

    def _read_cgroup(self, directory: Path, snap: Snapshot) -> None:
        cpu = self._parse(directory, "cpu.stat", cgroup.parse_flat_keyed)
        if isinstance(cpu, dict):
            snap.cpu = cpu
        # cpu.max exists only below the root and only with the cpu controller enabled.
        if (directory / "cpu.max").exists():
            cpu_max = self._parse(directory, "cpu.max", str.split)
            if isinstance(cpu_max, list) and len(cpu_max) == 2:
                quota, period = cpu_max
                snap.cpu_has_limit = quota != "max"
                if quota != "max" and period.isdigit() and int(period) > 0 and quota.isdigit():
                    snap.cpu_limit_cores = int(quota) / int(period)
        for resource in PRESSURE_RESOURCES:
            psi = self._parse(directory, f"{resource}.pressure", cgroup.parse_pressure)
            if isinstance(psi, dict) and psi:
                snap.pressure[resource] = psi
        io = self._parse(directory, "io.stat", cgroup.parse_io_stat)
        if isinstance(io, dict):
            snap.io = io
        current = self._parse(directory, "memory.current", cgroup.parse_single)
        if isinstance(current, int):
            snap.memory_current = current
        mem_max = self._parse(directory, "memory.max", cgroup.parse_single)
        if isinstance(mem_max, int):
            snap.memory_max = mem_max
        stat = self._parse(directory, "memory.stat", cgroup.parse_flat_keyed)
        if isinstance(stat, dict):
            snap.memory_stat = stat
        events = self._parse(directory, "memory.events", cgroup.parse_flat_keyed)
        if isinstance(events, dict):
            snap.memory_events = events


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
