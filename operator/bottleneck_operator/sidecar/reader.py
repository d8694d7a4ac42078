"""The collector's readings: one :class:`Snapshot` per period, read by :class:`Reader`.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bottleneck_operator.sidecar import cgroup
from bottleneck_operator.sidecar.gpu import GpuReading, Nvml
from bottleneck_operator.sidecar.netdev import NetBytes, parse_net_dev
from bottleneck_operator.sidecar.procs import BusyTracker, ProcessCounts, count_states

log = logging.getLogger(__name__)

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
    network: NetBytes | None = None  # the pod's own interfaces (its network namespace), loopback left out
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
        network: count the pod's network bytes (off when the pod shares the node's network namespace).
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
        network: bool = True,
        nvml: Nvml | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cgroup_root = cgroup_root
        self.proc_root = proc_root
        self.identity = identity or Identity.from_env()
        self.processes = processes
        self.network = network
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
        if self.network:
            net = self._parse(self.proc_root / "net", "dev", parse_net_dev)
            if isinstance(net, NetBytes):
                snap.network = net
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
