"""Process states of the pod's processes, read from /proc/<pid>/stat.

With ``shareProcessNamespace: true`` (set by the webhook) the collector's /proc lists every process
of the pod: the trainer, its data-loader workers, other sidecars and the pod's ``pause`` process.
State letters (``proc(5)``): R running or runnable, D uninterruptible sleep (usually waiting on
storage I/O), S interruptible sleep. A data-loader worker stuck in D is the classic sign of an
input pipeline waiting on storage.

Each process is counted by the state of its main thread; threads are not walked (a trainer has
hundreds and the main-thread view is what matters for data-loader worker processes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Processes that are part of the pod's plumbing rather than the workload.
_IGNORED_COMMANDS = frozenset({"pause"})

STATES = {"R": "running", "D": "iowait", "S": "sleeping"}


@dataclass(frozen=True)
class ProcessCounts:
    """How many of the workload's processes are in each state, and how many were seen at all."""

    running: int = 0
    iowait: int = 0
    sleeping: int = 0
    seen: int = 0


def parse_stat(text: str) -> tuple[str, str, int] | None:
    """``(comm, state, ppid)`` from a /proc/<pid>/stat line, or None when malformed.

    The command name is in parentheses and may itself contain spaces and parentheses, so the state
    is read after the *last* closing parenthesis.
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
    except ValueError:
        return None
    return text[open_at + 1 : close_at], rest[0], ppid


def count_states(proc_root: Path, exclude: frozenset[int]) -> ProcessCounts:
    """Count the visible processes by state, leaving out ``exclude`` and the pod's ``pause``.

    Args:
        proc_root: the proc file system to read (``/proc``, or a copy in tests).
        exclude: process ids not to count (the collector itself).

    Returns:
        Counts per state; ``seen`` is the number of workload processes found in any state.
    """
    running = iowait = sleeping = seen = 0
    try:
        entries = os.listdir(proc_root)
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
        comm, state, _ = parsed
        if comm in _IGNORED_COMMANDS:
            continue
        seen += 1
        if state == "R":
            running += 1
        elif state == "D":
            iowait += 1
        elif state == "S":
            sleeping += 1
    return ProcessCounts(running=running, iowait=iowait, sleeping=sleeping, seen=seen)
