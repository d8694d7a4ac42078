"""Local processes for tests, demo and benchmarks: finding binaries, free ports, readiness, stopping.

Shared by :mod:`.localprom` (Prometheus, promtool), :mod:`.localvm` (VictoriaMetrics) and
:mod:`.nodeexporter`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.httpclient import simple_request

_INSTALL_HINT = (
    "run `make test` or `make demo`, which install Debian's prometheus, promtool and prometheus-node-exporter"
)
LOG_TAIL = 3000  # characters of a failing process's log quoted in the error


class LocalPrometheusError(BottleneckError):
    """The local Prometheus or node-exporter could not be prepared or started."""


def find_binary(name: str) -> str:
    """Absolute path of an executable on PATH.

    Args:
        name: e.g. "prometheus", "promtool", "prometheus-node-exporter".

    Returns:
        The path.

    Raises:
        LocalPrometheusError: when the executable is missing, with how to install it.
    """
    found = shutil.which(name)
    if found is None:
        raise LocalPrometheusError(f"`{name}` not found on PATH: {_INSTALL_HINT}")
    return found


def binaries_available() -> bool:
    """True when prometheus, promtool and prometheus-node-exporter are all installed."""
    return all(shutil.which(n) for n in ("prometheus", "promtool", "prometheus-node-exporter"))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the caller retries if another process takes it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tail_log(path: Path) -> str:
    """The end of a process's log file, to quote in an error."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL:]


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """Whether ``url`` answers with a 2xx status within ``timeout`` seconds."""
    try:
        status, _ = simple_request("GET", url, timeout=timeout)
    except OSError:
        return False
    return 200 <= status < 300


def stop_process(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    """Terminate a process, killing it after ``grace`` seconds; nothing when it is gone already."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace)


def hostname() -> str:
    """This machine's node name, as node-exporter's ``node_uname_info{nodename}`` reports it."""
    return os.uname().nodename


def launch_on_free_port(
    name: str,
    command: Callable[[int], list[str]],
    *,
    ready_url: Callable[[int], str],
    log_path: Path,
    cwd: Path,
    timeout: float,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server on a free loopback port and wait until ``ready_url`` answers 2xx.

    Args:
        name: what to call it in the error.
        command: the command line for a port.
        ready_url: the URL that answers once it serves, for a port.
        log_path: where its output is appended.
        cwd: its working directory.
        timeout: seconds to wait for readiness per attempt.

    Returns:
        (the running process, its port).

    Raises:
        LocalPrometheusError: it exited or was not ready in time; the log's tail is in the message.
    """
    last_error = ""
    for _attempt in range(3):  # the free port can be taken between probing and binding
        port = free_port()
        with log_path.open("ab") as log:
            proc = subprocess.Popen(command(port), stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if http_ok(ready_url(port), timeout=2.0):
                # a server that lost the port to another one exits; the answer then came from that other
                if proc.poll() is None:
                    return proc, port
                break
            time.sleep(0.1)
        last_error = tail_log(log_path)
        stop_process(proc)
        if "address already in use" not in last_error:
            break
    raise LocalPrometheusError(f"{name} did not become ready; log {log_path}:\n{last_error}")
