"""The local Prometheus runner: backfill, start, serve, scrape, stop, fail clearly."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.errors import BottleneckError
from bottleneck_operator_dev.simulation import localprom
from bottleneck_operator_dev.simulation.localprom import LocalPrometheus, LocalPrometheusError

pytestmark = pytest.mark.prometheus


def _query(url: str, promql: str, at: float) -> list[dict[str, Any]]:
    qs = urllib.parse.urlencode({"query": promql, "time": at})
    with urllib.request.urlopen(f"{url}/api/v1/query?{qs}", timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success"
    return list(body["data"]["result"])


def test_backfilled_file_is_served(basic_prometheus: LocalPrometheus) -> None:
    result = _query(basic_prometheus.url, 'count(kube_pod_info{namespace="ml"})', 1767225600 + 300)
    assert float(result[0]["value"][1]) == 3


def test_backfilled_text_and_counter_rate(start_prometheus: Any) -> None:
    t0 = 1767225600
    lines = ["# TYPE demo_requests counter"]
    lines += [f'demo_requests_total{{pod="p"}} {i * 30} {t0 + i * 15}' for i in range(40)]
    prom = start_prometheus("\n".join([*lines, "# EOF"]) + "\n")
    result = _query(prom.url, "rate(demo_requests_total[2m])", t0 + 300)
    assert float(result[0]["value"][1]) == pytest.approx(2.0)


def test_bad_openmetrics_is_a_clear_error(tmp_path: Path) -> None:
    if not localprom.binaries_available():
        pytest.skip("prometheus not installed")
    with pytest.raises(LocalPrometheusError) as info:
        LocalPrometheus.from_openmetrics("this is { not openmetrics\n", workdir=tmp_path)
    assert "promtool" in str(info.value)
    assert isinstance(info.value, BottleneckError)


def test_missing_binary_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LocalPrometheusError, match="make test"):
        LocalPrometheus.from_openmetrics(None, workdir=tmp_path)


def test_stop_is_idempotent_and_frees_the_port(start_prometheus: Any) -> None:
    prom = start_prometheus(None)
    url = prom.url
    assert prom.running
    prom.stop()
    prom.stop()
    assert not prom.running
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/-/ready", timeout=2)


def test_scrape_config_one_job_per_name_and_path() -> None:
    text = localprom._scrape_config({"dcgm": ["http://127.0.0.1:1/metrics", "127.0.0.1:2"], "x": ["h:3/m"]}, 5)
    assert text.count("job_name") == 2  # same path /metrics is one job; x is the other
    assert "honor_labels: true" in text
    assert '"/m"' in text


def test_prometheus_scrapes_live_node_exporter(start_prometheus: Any, node_exporter: Any) -> None:
    prom = start_prometheus(None, scrape_targets={"node-exporter": [node_exporter.url]}, scrape_interval=1)
    import time

    deadline = time.time() + 30
    result: list[dict[str, Any]] = []
    while time.time() < deadline and not result:
        result = _query(prom.url, "node_uname_info", time.time())
        time.sleep(0.5)
    assert result, "node_uname_info was never scraped"
    assert result[0]["metric"]["nodename"] == localprom.hostname()
    assert result[0]["metric"]["instance"] == node_exporter.address
