"""Process states of the pod's processes, read from /proc/<pid>/stat.

With ``shareProcessNamespace: true`` (set by the webhook) the collector's /proc lists every process
of the pod: the trainer, its data-loader workers, other sidecars and the pod's ``pause`` process.
State letters (``proc(5)``): R running or runnable, D uninterruptible sleep (usually waiting on
storage I/O), S interruptible sleep. A data-loader worker stuck in D is the classic sign of an
input pipeline waiting on storage.

Each process is counted by the state of its main thread; threads are not walked (a trainer has
hundreds and the main-thread view is what matters for data-loader worker processes).

A process is *busy* when it used at least :data:`BUSY_CORE` of a core between two readings (its
``utime + stime``, summed over its threads). Too few data-loader workers show as a few processes
pinned at a full core while the pod's other cores idle; readers of remote storage sleep on their
sockets and use a fraction of a core each; workers that share too few cores, or a CFS quota, get
less than a core each.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# Processes that are part of the pod's plumbing rather than the workload.
_IGNORED_COMMANDS = frozenset({"pause"})

STATES = {"R": "running", "D": "iowait", "S": "sleeping"}
# A process at this share of one core or more is pinned: its own serial speed limits it, not a quota
# or its neighbours (a worker throttled by CFS or time-sliced with others reads below it).
BUSY_CORE = 0.9


@dataclass(frozen=True)
class ProcessCounts:
    """How many of the workload's processes are in each state, and how many were seen at all."""

    running: int = 0
    iowait: int = 0
    sleeping: int = 0
    seen: int = 0
    # CPU clock ticks (utime + stime) of each counted process, for :func:`busy_processes`
    ticks: dict[int, int] = field(default_factory=dict, compare=False, repr=False)


def parse_stat(text: str) -> tuple[str, str, int, int] | None:
    """``(comm, state, ppid, cpu ticks)`` from a /proc/<pid>/stat line, or None when malformed.

    The command name is in parentheses and may itself contain spaces and parentheses, so the state
    is read after the *last* closing parenthesis. The CPU ticks are ``utime + stime`` (fields 14
    and 15 of ``proc(5)``); a line cut short of them reads 0.
    """
    open_at = text.find("(")
    close_at = text.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = text[close_at + 1 :].split()
    if len(rest) < 2:
        return None
    try:
        ppid = int(rest[1])
        ticks = int(rest[11]) + int(rest[12]) if len(rest) > 12 else 0
    except ValueError:
        return None
    return text[open_at + 1 : close_at], rest[0], ppid, ticks


def count_states(proc_root: Path, exclude: frozenset[int], pids: Iterable[int] | None = None) -> ProcessCounts:
    """Count the visible processes by state, leaving out ``exclude`` and the pod's ``pause``.

    Args:
        proc_root: the proc file system to read (``/proc``, or a copy in tests).
        exclude: process ids not to count (the collector itself).
        pids: the processes to read (a cgroup's), instead of every one ``proc_root`` lists.

    Returns:
        Counts per state; ``seen`` is the number of workload processes found in any state.
    """
    running = iowait = sleeping = seen = 0
    ticks: dict[int, int] = {}
    try:
        entries = os.listdir(proc_root) if pids is None else [str(pid) for pid in pids]
    except OSError:
        return ProcessCounts()
    for name in entries:
        if not name.isdigit() or int(name) in exclude:
            continue
        try:
            with open(proc_root / name / "stat") as fh:
                parsed = parse_stat(fh.read())
        except OSError:
            continue  # the process ended between listing and reading, or is hidden from us
        if parsed is None:
            continue
        comm, state, _, cpu = parsed
        if comm in _IGNORED_COMMANDS:
            continue
        seen += 1
        ticks[int(name)] = cpu
        if state == "R":
            running += 1
        elif state == "D":
            iowait += 1
        elif state == "S":
            sleeping += 1
    return ProcessCounts(running=running, iowait=iowait, sleeping=sleeping, seen=seen, ticks=ticks)


def busy_processes(before: ProcessCounts, after: ProcessCounts, seconds: float, ticks_per_second: float) -> int | None:
    """How many processes seen in both readings used at least :data:`BUSY_CORE` of a core between them.

    Args:
        before, after: two readings of :func:`count_states`.
        seconds: the time between them.
        ticks_per_second: the kernel's clock ticks per second (``SC_CLK_TCK``).

    Returns:
        The count, or None when the interval is too short to tell (under one tick per process).
    """
    if seconds * ticks_per_second < 1.0 / (1.0 - BUSY_CORE):
        return None
    need = BUSY_CORE * seconds * ticks_per_second
    # a pid reused by a new process between the readings counts from zero, never below it
    return sum(1 for pid, t in after.ticks.items() if pid in before.ticks and t - before.ticks[pid] >= need)


class BusyTracker:
    """:func:`busy_processes` between each reading and the one before it."""

    def __init__(self, ticks_per_second: float | None = None) -> None:
        self.ticks_per_second = ticks_per_second or float(os.sysconf("SC_CLK_TCK"))
        self._previous: tuple[ProcessCounts, float] | None = None

    def update(self, counts: ProcessCounts, now: float) -> int | None:
        """Busy processes since the previous reading (None for the first one), ``now`` in seconds."""
        before, self._previous = self._previous, (counts, now)
        if before is None:
            return None
        return busy_processes(before[0], counts, now - before[1], self.ticks_per_second)
