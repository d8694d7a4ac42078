"""One recorded pod's cgroup: limits set, counters read, on cgroup v2 or on a hybrid host.

A pure cgroup v2 host has the cpu, memory and io controllers in the unified hierarchy and this class
writes ``cpu.max``, ``memory.max``, ``memory.swap.max`` and ``io.max`` there. Hosts that still mount
the controllers on cgroup v1 (a hybrid layout: the unified hierarchy then has no controllers) get
the same limits through the v1 files (``cpu.cfs_quota_us``, ``memory.limit_in_bytes``,
``memory.memsw.limit_in_bytes``, ``blkio.throttle.read_bps_device``), and the process also joins a
unified-hierarchy cgroup so that its pressure (PSI) is still read per cgroup, as the kubelet on a
v2 node and the collector sidecar read it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


class CgroupError(RuntimeError):
    """The cgroup could not be made or limited (the message says which file)."""


def _unified_root() -> Path:
    # Hybrid hosts mount the unified hierarchy at /sys/fs/cgroup/unified.
    return ROOT / "unified" if (ROOT / "unified" / "cgroup.procs").exists() else ROOT


def _v2_controllers() -> set[str]:
    path = _unified_root() / "cgroup.controllers"
    return set(path.read_text().split()) if path.exists() else set()


@dataclass(frozen=True)
class Limits:
    """The limits of one recorded pod; None leaves a resource unlimited."""

    cpu_cores: float | None = None
    memory_bytes: int | None = None
    swap_bytes: int | None = None
    read_bps: tuple[str, int] | None = None  # (block device "major:minor", bytes/s)


@dataclass
class Counters:
    """A reading of the cgroup's counters (cumulative ones in their native units, converted)."""

    cpu_seconds: float = 0.0
    nr_periods: float = 0.0
    nr_throttled: float = 0.0
    throttled_seconds: float = 0.0
    memory_bytes: float = 0.0
    working_set_bytes: float = 0.0
    swap_bytes: float = 0.0
    major_faults: float = 0.0
    oom_kills: float = 0.0
    read_bytes: float = 0.0
    reads: float = 0.0
    write_bytes: float = 0.0
    psi_some: dict[str, float] | None = None  # resource -> seconds
    psi_full: dict[str, float] | None = None


def _kv(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                with contextlib.suppress(ValueError):
                    out[parts[0]] = float(parts[1])
    return out


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise CgroupError(f"cannot write {value!r} to {path}: {exc}") from exc


def _psi_totals(path: Path) -> tuple[float, float]:
    """(some, full) total stall seconds from a ``*.pressure`` file."""
    some = full = 0.0
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            fields = dict(f.split("=", 1) for f in line.split()[1:])
            total = float(fields.get("total", 0)) / 1e6
            if line.startswith("some"):
                some = total
            elif line.startswith("full"):
                full = total
    return some, full


class Cgroup:
    """A cgroup named ``name`` under each hierarchy it needs; remove it with :meth:`remove`."""

    def __init__(self, name: str, limits: Limits) -> None:
        self.name = name
        self.limits = limits
        self.unified = _unified_root() / name
        self.v2 = {"cpu", "memory", "io"} <= _v2_controllers()
        self.v1 = {c: ROOT / c / name for c in ("cpu", "cpuacct", "memory", "blkio")} if not self.v2 else {}

    def create(self) -> None:
        """Make the cgroup directories and write the limits."""
        lim = self.limits
        if self.v2:
            _write(_unified_root() / "cgroup.subtree_control", "+cpu +memory +io")
        self.unified.mkdir(exist_ok=True)
        for path in self.v1.values():
            if not path.exists():
                path.mkdir()
        if lim.cpu_cores is not None:
            quota = int(lim.cpu_cores * PERIOD_US)
            if self.v2:
                _write(self.unified / "cpu.max", f"{quota} {PERIOD_US}")
            else:
                _write(self.v1["cpu"] / "cpu.cfs_period_us", str(PERIOD_US))
                _write(self.v1["cpu"] / "cpu.cfs_quota_us", str(quota))
        if lim.memory_bytes is not None:
            if self.v2:
                _write(self.unified / "memory.max", str(lim.memory_bytes))
                _write(self.unified / "memory.swap.max", str(lim.swap_bytes or 0))
            else:
                _write(self.v1["memory"] / "memory.limit_in_bytes", str(lim.memory_bytes))
                memsw = lim.memory_bytes + (lim.swap_bytes or 0)
                _write(self.v1["memory"] / "memory.memsw.limit_in_bytes", str(memsw))
                _write(self.v1["memory"] / "memory.swappiness", "60")
        if lim.read_bps is not None:
            dev, bps = lim.read_bps
            if self.v2:
                _write(self.unified / "io.max", f"{dev} rbps={bps}")
            else:
                _write(self.v1["blkio"] / "blkio.throttle.read_bps_device", f"{dev} {bps}")

    def join(self, pid: int) -> None:
        """Move a process into the cgroup in every hierarchy."""
        for path in (self.unified, *self.v1.values()):
            _write(path / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        """The processes now in the cgroup."""
        with contextlib.suppress(OSError):
            return [int(p) for p in (self.unified / "cgroup.procs").read_text().split()]
        return []

    def read(self) -> Counters:
        """The counters now (cumulative ones since the cgroup was made)."""
        c = Counters(psi_some={}, psi_full={})
        assert c.psi_some is not None and c.psi_full is not None
        for res in ("cpu", "io", "memory"):
            c.psi_some[res], c.psi_full[res] = _psi_totals(self.unified / f"{res}.pressure")
        if self.v2:
            self._read_v2(c)
        else:
            self._read_v1(c)
        return c

    def _read_v2(self, c: Counters) -> None:
        cpu = _kv(self.unified / "cpu.stat")
        c.cpu_seconds = cpu.get("usage_usec", 0.0) / 1e6
        c.nr_periods, c.nr_throttled = cpu.get("nr_periods", 0.0), cpu.get("nr_throttled", 0.0)
        c.throttled_seconds = cpu.get("throttled_usec", 0.0) / 1e6
        mem = _kv(self.unified / "memory.stat")
        c.memory_bytes = _number(self.unified / "memory.current")
        c.working_set_bytes = max(0.0, c.memory_bytes - mem.get("inactive_file", 0.0))
        c.swap_bytes = _number(self.unified / "memory.swap.current")
        c.major_faults = mem.get("pgmajfault", 0.0)
        c.oom_kills = _kv(self.unified / "memory.events").get("oom_kill", 0.0)
        with contextlib.suppress(OSError):
            for line in (self.unified / "io.stat").read_text().splitlines():
                fields = dict(f.split("=", 1) for f in line.split()[1:])
                c.read_bytes += float(fields.get("rbytes", 0))
                c.reads += float(fields.get("rios", 0))
                c.write_bytes += float(fields.get("wbytes", 0))

    def _read_v1(self, c: Counters) -> None:
        c.cpu_seconds = _number(self.v1["cpuacct"] / "cpuacct.usage") / 1e9
        cpu = _kv(self.v1["cpu"] / "cpu.stat")
        c.nr_periods, c.nr_throttled = cpu.get("nr_periods", 0.0), cpu.get("nr_throttled", 0.0)
        c.throttled_seconds = cpu.get("throttled_time", 0.0) / 1e9
        mem = _kv(self.v1["memory"] / "memory.stat")
        c.memory_bytes = _number(self.v1["memory"] / "memory.usage_in_bytes")
        c.working_set_bytes = max(0.0, c.memory_bytes - mem.get("total_inactive_file", 0.0))
        c.swap_bytes = mem.get("total_swap", 0.0)
        c.major_faults = mem.get("total_pgmajfault", 0.0)
        c.oom_kills = _kv(self.v1["memory"] / "memory.oom_control").get("oom_kill", 0.0)
        for name, attr in (("io_service_bytes", "bytes"), ("io_serviced", "ios")):
            with contextlib.suppress(OSError):
                for line in (self.v1["blkio"] / f"blkio.throttle.{name}").read_text().splitlines():
                    parts = line.split()
                    if len(parts) == 3 and parts[1] in ("Read", "Write"):
                        if attr == "bytes" and parts[1] == "Read":
                            c.read_bytes += float(parts[2])
                        elif attr == "bytes":
                            c.write_bytes += float(parts[2])
                        elif parts[1] == "Read":
                            c.reads += float(parts[2])

    def remove(self) -> None:
        """Kill what is left inside and remove the directories."""
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        for path in (*self.v1.values(), self.unified):
            with contextlib.suppress(OSError):
                path.rmdir()


def _number(path: Path) -> float:
    try:
        return float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def block_device_of(path: Path) -> tuple[str, str]:
    """("major:minor", kernel name) of the whole disk holding ``path``."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    sysfs = Path(f"/sys/dev/block/{major}:{minor}")
    if (sysfs / "partition").exists():  # throttling applies to the whole disk, not the partition
        sysfs = sysfs.resolve().parent
        major, minor = (int(x) for x in (sysfs / "dev").read_text().split(":"))
    return f"{major}:{minor}", sysfs.resolve().name
