"""Finding the pod's cgroup v2 directory and parsing its files.

File formats follow the kernel's ``Documentation/admin-guide/cgroup-v2.rst``: flat keyed files
(``cpu.stat``, ``memory.stat``, ``memory.events``: ``key value`` per line), nested keyed files
(``io.stat``: ``MAJ:MIN key=value ...``; the ``*.pressure`` files: ``some|full avg10=... total=<usec>``)
and single values (``memory.current``, ``memory.max`` which may read ``max``).

Layouts handled by :func:`unified_root`:

- pure cgroup v2: ``/sys/fs/cgroup`` is the cgroup2 mount (it has ``cgroup.controllers``);
- hybrid (v1 controllers + a unified mount at ``<root>/unified``, as on this project's own machines):
  the unified tree carries ``cpu.stat`` (usage only) and the ``*.pressure`` files but no controllers,
  so throttling, memory and IO figures are simply absent there.

cgroup v1 controller files are deliberately not read (see docs/sidecar.md): kubelet/cAdvisor already
publish the v1 figures, and Kubernetes nodes run v2 today.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from pathlib import Path

# Directory names the kubelet gives pod cgroups: "pod<uid>" (cgroupfs driver) or
# "kubepods-<qos>-pod<uid with _ for ->.slice" (systemd driver); kind and k3s nest them deeper.
_MAX_SEARCH_DEPTH = 6


def unified_root(root: Path) -> Path | None:
    """The cgroup v2 hierarchy under ``root``: ``root`` itself or the hybrid layout's ``root/unified``.

    Args:
        root: where the cgroup file system is mounted (``/sys/fs/cgroup`` or the host's copy).

    Returns:
        The directory of the v2 hierarchy, or None when there is none.
    """
    if (root / "cgroup.controllers").is_file():
        return root
    hybrid = root / "unified"
    if (hybrid / "cgroup.controllers").is_file():
        return hybrid
    return None


def pod_cgroup_names(pod_uid: str) -> tuple[str, str]:
    """The two spellings of a pod UID in cgroup directory names (cgroupfs and systemd drivers)."""
    uid = pod_uid.strip().lower()
    return f"pod{uid}", f"pod{uid.replace('-', '_')}"


def find_pod_cgroup(v2root: Path, pod_uid: str) -> Path | None:
    """Search the v2 hierarchy for the pod's own cgroup directory.

    The search is breadth-first and bounded: it enters only directories whose name mentions
    ``kube`` (kubepods, kubelet) below the first two levels, so a host tree with thousands of
    service cgroups costs a few directory listings. It runs at start and again only when the
    directory found earlier disappears.

    Args:
        v2root: the cgroup v2 hierarchy (see :func:`unified_root`).
        pod_uid: the pod's UID (downward API ``metadata.uid``).

    Returns:
        The pod's cgroup directory, or None when it is not visible.
    """
    if not pod_uid.strip():
        return None
    wanted = pod_cgroup_names(pod_uid)
    queue: deque[tuple[Path, int]] = deque([(v2root, 0)])
    while queue:
        current, depth = queue.popleft()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            name = entry.name
            stem = name.removesuffix(".slice")
            if any(stem == w or stem.endswith("-" + w) for w in wanted):
                return Path(entry.path)
            if depth + 1 < _MAX_SEARCH_DEPTH and (depth < 2 or "kube" in name):
                queue.append((Path(entry.path), depth + 1))
    return None


def own_cgroup(v2root: Path, proc_root: Path) -> Path | None:
    """This process's own v2 cgroup (the ``0::<path>`` line of /proc/self/cgroup) under ``v2root``.

    Used outside Kubernetes (no pod UID): the collector then reports the cgroup it runs in.

    Args:
        v2root: the cgroup v2 hierarchy.
        proc_root: the proc file system (``/proc``).

    Returns:
        The directory, or None when /proc/self/cgroup has no v2 line or the path is not there.
    """
    try:
        text = (proc_root / "self" / "cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            candidate = v2root / path.lstrip("/")
            return candidate if candidate.is_dir() else None
    return None


def parse_flat_keyed(text: str) -> dict[str, int]:
    """``key value`` lines (cpu.stat, memory.stat, memory.events) as integers; odd lines skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def parse_pressure(text: str) -> dict[str, float]:
    """A PSI file as ``{"some": seconds, "full": seconds}`` from the ``total=`` microseconds.

    The ``full`` line is absent for CPU on older kernels (node-exporter has no CPU "full" either);
    on newer kernels it exists and reads zero at the root.
    """
    out: dict[str, float] = {}
    for line in text.splitlines():
        kind, _, fields = line.partition(" ")
        if kind not in ("some", "full"):
            continue
        for field in fields.split():
            key, _, value = field.partition("=")
            if key == "total":
                with contextlib.suppress(ValueError):  # a torn read: leave the line out
                    out[kind] = int(value) / 1e6
    return out


def parse_io_stat(text: str) -> dict[str, int]:
    """io.stat summed over devices: ``{"rbytes": n, "wbytes": n, "rios": n, ...}``."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        for field in line.split()[1:]:
            key, sep, value = field.partition("=")
            if not sep:
                continue
            try:
                out[key] = out.get(key, 0) + int(value)
            except ValueError:
                continue
    return out


def parse_single(text: str) -> int | None:
    """A one-value file (memory.current, memory.max): the integer, or None for ``max``."""
    value = text.strip()
    if value == "max":
        return None
    return int(value)
