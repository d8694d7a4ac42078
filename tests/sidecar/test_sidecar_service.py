"""The collector as it runs in a pod: the `sidecar` command serving /metrics, scraped by a real Prometheus."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _sidecar_support import POD_UID, build_tree, value, write_proc

from bottleneck_operator.sidecar.service import CollectorOptions, serve
from bottleneck_operator_dev.simulation.localprom import free_port

POD_ENV = {"POD_NAMESPACE": "ml", "POD_NAME": "train-resnet-x7k2p", "NODE_NAME": "gpu-node-3", "POD_UID": POD_UID}
LABELS = {"namespace": "ml", "pod": "train-resnet-x7k2p", "node": "gpu-node-3"}
PROCS = {1: ("pause", "S"), 7: ("python", "R"), 8: ("pt_data_worker", "D")}


def _get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return str(resp.read().decode())


def _wait_for(url: str, deadline: float = 30.0) -> str:
    end = time.monotonic() + deadline
    while True:
        try:
            return _get(url)
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


@pytest.fixture
def collector_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`bottleneck-operator sidecar` as a child process over a synthetic pod, env as the downward API sets it."""
    build_tree(tmp_path / "cg")
    proc_root = write_proc(tmp_path / "proc", PROCS)
    port = free_port()
    env = {**os.environ, **POD_ENV}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneck_operator",
            "sidecar",
            "--port",
            str(port),
            "--period",
            "1",
            "--address",
            "127.0.0.1",
            "--cgroup-root",
            str(tmp_path / "cg"),
            "--proc-root",
            str(proc_root),
            "--no-gpu",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield child, port
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=10)


def test_serve_refreshes_and_stops_on_request(tmp_path: Path) -> None:
    pod = build_tree(tmp_path / "cg")
    port = free_port()
    stop = threading.Event()
    options = CollectorOptions(
        port=port,
        address="127.0.0.1",
        period=0.05,
        cgroup_root=tmp_path / "cg",
        proc_root=write_proc(tmp_path / "proc", PROCS),
        gpu=False,
    )
    os.environ.update(POD_ENV)
    try:
        thread = threading.Thread(target=serve, args=(options, stop), daemon=True)
        thread.start()
        first = _wait_for(f"http://127.0.0.1:{port}/metrics")
        assert value(first, "bottleneck_sidecar_memory_oom_kills_total", **LABELS) == 1
        (pod / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\n")
        end = time.monotonic() + 20
        while value(_get(f"http://127.0.0.1:{port}/metrics"), "bottleneck_sidecar_memory_oom_kills_total") != 2:
            assert time.monotonic() < end, "the new reading never showed"
            time.sleep(0.05)
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()
    finally:
        for key in POD_ENV:
            os.environ.pop(key, None)


def test_once_prints_one_reading_with_pod_labels(tmp_path: Path) -> None:
    build_tree(tmp_path / "cg")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bottleneck_operator",
            "sidecar",
            "--once",
            "--no-gpu",
            "--cgroup-root",
            str(tmp_path / "cg"),
            "--proc-root",
            str(write_proc(tmp_path / "proc", PROCS)),
        ],
        env={**os.environ, **POD_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert value(result.stdout, "bottleneck_sidecar_cpu_throttled_periods_total", **LABELS) == 1500
    assert value(result.stdout, "bottleneck_sidecar_processes", state="iowait", **LABELS) == 1


def test_bad_flags_are_usage_errors_without_traceback() -> None:
    for args in (["--period", "0"], ["--port", "70000"]):
        result = subprocess.run(
            [sys.executable, "-m", "bottleneck_operator", "sidecar", "--once", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2
        assert "error:" in result.stderr and "Traceback" not in result.stderr


def test_sigterm_ends_the_collector_cleanly(collector_process: tuple[subprocess.Popen[str], int]) -> None:
    child, port = collector_process
    _wait_for(f"http://127.0.0.1:{port}/metrics")
    child.send_signal(signal.SIGTERM)  # what the kubelet sends once the trainer has exited
    assert child.wait(timeout=15) == 0


def test_port_in_use_is_one_clear_error(collector_process: tuple[subprocess.Popen[str], int], tmp_path: Path) -> None:
    _, port = collector_process
    _wait_for(f"http://127.0.0.1:{port}/metrics")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bottleneck_operator",
            "sidecar",
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
            "--cgroup-root",
            str(tmp_path / "cg"),
            "--no-gpu",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot serve /metrics" in result.stderr and "Traceback" not in result.stderr


def _query(prom_url: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prom_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    body = json.loads(_get(url))
    assert body["status"] == "success"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@pytest.mark.prometheus
def test_real_prometheus_scrapes_the_fixed_names_and_labels(
    collector_process: tuple[subprocess.Popen[str], int], start_prometheus: Any
) -> None:
    _, port = collector_process
    _wait_for(f"http://127.0.0.1:{port}/metrics")
    prom = start_prometheus(None, scrape_targets={"bottleneck-collector": [f"127.0.0.1:{port}"]}, scrape_interval=1.0)
    selector = '{namespace="ml", pod="train-resnet-x7k2p", node="gpu-node-3"}'
    end = time.monotonic() + 60
    while not _query(prom.url, f"bottleneck_sidecar_info{selector}"):
        assert time.monotonic() < end, "Prometheus never scraped the collector"
        time.sleep(0.5)
    expected = {
        "bottleneck_sidecar_cpu_usage_seconds_total": 123.456789,
        "bottleneck_sidecar_cpu_periods_total": 4000,
        "bottleneck_sidecar_cpu_throttled_periods_total": 1500,
        "bottleneck_sidecar_cpu_throttled_seconds_total": 98.765432,
        'bottleneck_sidecar_pressure_waiting_seconds_total{resource="io"}': 120.0,
        'bottleneck_sidecar_pressure_stalled_seconds_total{resource="io"}': 90.0,
        'bottleneck_sidecar_pressure_waiting_seconds_total{resource="cpu"}': 45.0,
        'bottleneck_sidecar_pressure_stalled_seconds_total{resource="memory"}': 0.001,
        "bottleneck_sidecar_io_read_bytes_total": 1500000,
        "bottleneck_sidecar_io_write_bytes_total": 2000,
        "bottleneck_sidecar_io_reads_total": 150,
        "bottleneck_sidecar_memory_current_bytes": 3221225472,
        "bottleneck_sidecar_memory_max_bytes": 8589934592,
        "bottleneck_sidecar_memory_major_faults_total": 4321,
        "bottleneck_sidecar_memory_swapins_total": 2718,
        "bottleneck_sidecar_memory_oom_kills_total": 1,
        'bottleneck_sidecar_processes{state="running"}': 1,
        'bottleneck_sidecar_processes{state="iowait"}': 1,
        'bottleneck_sidecar_info{source="cgroup2"}': 1,
    }
    for expr, want in expected.items():
        name, _, extra = expr.partition("{")
        labels = selector[1:-1] + (", " + extra.rstrip("}") if extra else "")
        result = _query(prom.url, f"{name}{{{labels}}}")
        assert len(result) == 1, (expr, result)
        assert float(result[0]["value"][1]) == pytest.approx(want), expr
        assert {k: result[0]["metric"][k] for k in LABELS} == LABELS


def test_the_collector_process_loads_no_heavy_libraries(tmp_path: Path) -> None:
    # Memory inside every profiled pod: the `sidecar` command must not pull in pydantic, numpy,
    # scikit-learn, kopf or aiohttp through the CLI's other commands.
    build_tree(tmp_path / "cg")
    script = (
        "import sys, io, contextlib\n"
        "from bottleneck_operator.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['sidecar', '--once', '--no-gpu', '--cgroup-root', {str(tmp_path / 'cg')!r}])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'numpy', 'sklearn', 'kopf', 'aiohttp', 'scipy', 'kubernetes'})\n"
        "print(rc, heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 []"
