"""A noisy neighbour: processes outside the recorded pod that keep every core of the node busy.

Node-wide CPU busy and pressure come from every process on the node; a Job whose own processes
wait on something else must not read as CPU-bound because a neighbour saturates the node.
"""

from __future__ import annotations

import os
import subprocess
import sys

from recordings.harness import Context

_SPINNERS: list[subprocess.Popen[bytes]] = []


def start_neighbours(ctx: Context) -> None:
    """One busy process per core, in the recorder's cgroup (not the pod's), as another pod's would be."""
    for _ in range(os.cpu_count() or 1):
        _SPINNERS.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))


def stop_neighbours(ctx: Context) -> None:
    for p in _SPINNERS:
        p.kill()
        p.wait()
    _SPINNERS.clear()
