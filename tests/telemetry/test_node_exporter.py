"""The node queries read the real prometheus-node-exporter's names and labels.

A real Prometheus scrapes the real node-exporter of this machine (and a kube-state-metrics-shaped
endpoint placing one pod on this machine's node name); fetch_windows must find the node through
the ``node_uname_info{nodename}`` join on ``instance`` and read CPU modes, memory and pressure as
this kernel reports them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator_dev.simulation.localprom import hostname

pytestmark = pytest.mark.prometheus
STEP = 1.0


def _ksm_text() -> bytes:
    node = hostname()
    return (
        "# TYPE kube_pod_info gauge\n"
        f'kube_pod_info{{namespace="ml",pod="probe-job-x7k2q",node="{node}",created_by_kind="Job",'
        'created_by_name="probe-job",host_ip="127.0.0.1"} 1\n'
        f'kube_pod_info{{namespace="ml",pod="neighbour-abcde",node="{node}",created_by_kind="Job",'
        'created_by_name="neighbour"} 1\n'
        f'kube_pod_info{{namespace="kube-system",pod="kube-proxy-q1",node="{node}",created_by_kind="DaemonSet",'
        'created_by_name="kube-proxy"} 1\n'
    ).encode()


class _Ksm(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = _ksm_text()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def ksm_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ksm)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def live(start_prometheus: Any, node_exporter: Any, ksm_url: str) -> tuple[Settings, float]:
    prom = start_prometheus(
        None, scrape_targets={"node-exporter": [node_exporter.url], "kube-state-metrics": [ksm_url]}, scrape_interval=1
    )
    settings = Settings(prometheus_url=prom.url, step=STEP)
    client = PrometheusClient(settings)
    started = time.time()
    # Wait (bounded) until both targets have ~8 scrapes: enough for rate() over 4 intervals.
    while time.time() - started < 60:
        rows = client.query(
            "count_over_time(node_uname_info[30s]) and on() count_over_time(kube_pod_info[30s])", time.time()
        )
        if rows and float(rows[0]["value"][1]) >= 8:
            break
        time.sleep(0.5)
    return settings, started


@pytest.fixture(scope="module")
def window(live: tuple[Settings, float]) -> Any:
    settings, _ = live
    now = float(int(time.time()))
    req = WindowRequest("ml", "probe-job", now - 8, now)
    return fetch_windows(PrometheusClient(settings), [req], settings.labels, step=settings.analysis.step)[
        ("ml", "probe-job")
    ]


def test_pod_placed_on_this_node(window: Any) -> None:
    assert [p.pod for p in window.pods] == ["probe-job-x7k2q"]
    pod = window.pods[0]
    assert pod.node == hostname()
    assert pod.co_located_pods == 1  # the neighbour Job's pod; the DaemonSet pod does not count


def _proc_cpus() -> int:
    return sum(1 for line in Path("/proc/stat").read_text().splitlines() if line[:3] == "cpu" and line[3:4].isdigit())


def _meminfo(key: str) -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return float(line.split()[1]) * 1024
    raise KeyError(key)


def test_cpu_modes_and_count(window: Any) -> None:
    s = window.pods[0].signals
    assert np.nanmax(s["node_cpus"]) == _proc_cpus()
    for name in ("node_cpu_busy_frac", "node_cpu_iowait_frac", "node_cpu_system_frac"):
        values = s[name][np.isfinite(s[name])]
        assert values.size > 0, name
        assert ((values >= -1e-9) & (values <= 1 + 1e-9)).all(), name
    busy = np.nanmean(s["node_cpu_busy_frac"])
    assert busy >= np.nanmean(s["node_cpu_system_frac"]) - 1e-9  # system time is part of busy time


def test_memory_against_proc_meminfo(window: Any) -> None:
    s = window.pods[0].signals
    expected = _meminfo("MemAvailable") / _meminfo("MemTotal")
    assert np.nanmedian(s["node_mem_avail_frac"]) == pytest.approx(expected, abs=0.1)
    swap_total = _meminfo("SwapTotal")
    swap = np.nanmedian(s["node_swap_used_frac"])
    if swap_total == 0:
        assert swap == 0.0
    else:
        assert 0.0 <= swap <= 1.0


def test_network_and_disk_names(window: Any) -> None:
    s = window.pods[0].signals
    assert "node_net_rx_bps" in s and "node_net_tx_bps" in s
    assert np.nanmin(s["node_net_rx_bps"]) >= 0
    assert "node_majfault_ps" in s


@pytest.mark.skipif(not os.path.exists("/proc/pressure/io"), reason="kernel without PSI")
def test_pressure(window: Any) -> None:
    s = window.pods[0].signals
    assert Family.NODE_PSI in window.quality.families
    for name in ("node_psi_cpu_some", "node_psi_io_some", "node_psi_io_full", "node_psi_mem_some"):
        values = s[name][np.isfinite(s[name])]
        assert values.size > 0 and (values >= 0).all() and (values <= 1.05).all(), name


def test_node_label_mode_on_live_series(live: tuple[Settings, float]) -> None:
    # With node_exporter_node_label set, series must carry that label: node-exporter's own series
    # do not have "nodename", so the node family is absent and the report says so.
    settings, _ = live
    alt = settings.model_copy(update={"node_exporter_node_label": "nodename"})
    now = float(int(time.time()))
    w = fetch_windows(
        PrometheusClient(alt), [WindowRequest("ml", "probe-job", now - 8, now)], alt.labels, step=alt.analysis.step
    )[("ml", "probe-job")]
    assert Family.NODE not in w.quality.families
    assert any("no node-exporter series" in n for n in w.quality.notes)
