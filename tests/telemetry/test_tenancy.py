"""Tenants isolated: a pod in one namespace cannot write into another namespace's analysis.

Team B's Job is simulated and backfilled into a real Prometheus. A pod of team A then publishes
series claiming team B's Job (its pods' GPU, CPU and collector series, and a pod of its own listed
in B's Job by a forged ``kube_pod_info``), and that Prometheus scrapes it two ways:

- as the chart's PodMonitor scrapes collectors: the scrape config is built from the PodMonitor the
  chart renders (``honorLabels``, relabelling from the ``__meta_kubernetes_pod_*`` labels that
  Kubernetes service discovery gives a target, set here as the target's static labels);
- as team A's own monitor with ``honorLabels: true`` would, under a scrape job of its own.

Team B's analysis must be exactly what a Prometheus without the attacker gives. The same analysis
with the scrape-job restriction turned off reads the forged series: the attack is real, and only
the restriction stops it.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import helm_python as helm
import numpy as np
import pytest
from tests.chart._helpers import CHART, one, render_docs

from bottleneck_operator.pipeline import Analyzer, JobRequest, JobResult
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient
from bottleneck_operator.telemetry.doctor import check
from bottleneck_operator_dev.simulation import generate_jobs, write_openmetrics

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

SEED = 4040
STEP = 5.0
ATTACKER = {"namespace": "team-a", "pod": "innocent-0", "node": "node-a"}


def _podmonitor_scrape_config(target: str) -> dict[str, Any]:
    """The chart's collector PodMonitor as the Prometheus Operator turns it into a scrape config."""
    with helm.Chart.load(CHART) as chart:
        monitor = one(render_docs(chart), "PodMonitor")
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    relabel = []
    for rule in endpoint.get("relabelings", []):
        converted: dict[str, Any] = {"target_label": rule["targetLabel"]}
        if "sourceLabels" in rule:
            converted["source_labels"] = rule["sourceLabels"]
        if "replacement" in rule:
            converted["replacement"] = rule["replacement"]
        relabel.append(converted)
    meta = {
        "__meta_kubernetes_namespace": ATTACKER["namespace"],
        "__meta_kubernetes_pod_name": ATTACKER["pod"],
        "__meta_kubernetes_pod_node_name": ATTACKER["node"],
    }
    name = monitor["metadata"]["name"]
    return {
        "job_name": f"podMonitor/{monitor['metadata']['namespace']}/{name}/0",
        "honor_labels": endpoint["honorLabels"],
        "metrics_path": endpoint["path"],
        "scrape_interval": "1s",
        "static_configs": [{"targets": [target], "labels": meta}],
        "relabel_configs": relabel,
    }


def _forged(victim: Any) -> bytes:
    """Series claiming team B's Job: its pod's GPU, CPU and collector series, and a pod of its own."""
    ns, job = victim.namespace, victim.name
    pod, node = victim.pods[0].pod, victim.pods[0].node
    claim = f'namespace="{ns}",pod="{pod}"'
    lines = [
        "# TYPE kube_pod_info gauge",
        f'kube_pod_info{{namespace="{ns}",pod="{job}-forged-0",node="{node}",created_by_kind="Job",'
        f'created_by_name="{job}"}} 1',
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
        f'DCGM_FI_DEV_GPU_UTIL{{{claim},gpu="7",UUID="GPU-forged",modelName="NVIDIA A100-SXM4-80GB",'
        f'Hostname="{node}"}} 3',
        "# TYPE DCGM_FI_DEV_FB_USED gauge",
        f'DCGM_FI_DEV_FB_USED{{{claim},gpu="7",UUID="GPU-forged",modelName="NVIDIA A100-SXM4-80GB",'
        f'Hostname="{node}"}} 100',
        "# TYPE container_cpu_usage_seconds_total counter",
        f'container_cpu_usage_seconds_total{{{claim},container="trainer"}} {time.time() * 64:.0f}',
        "# TYPE bottleneck_sidecar_info gauge",
        f'bottleneck_sidecar_info{{{claim},node="{node}",version="0.1.0"}} 1',
    ]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def victim() -> Any:
    now = time.time()
    (job,) = generate_jobs(SEED, 1, start=now - 540, duration=480, namespace="team-b", scrape_interval=15)
    return job


@pytest.fixture(scope="module")
def attacker(victim: Any) -> Iterator[str]:
    body = _forged(victim)

    class Forger(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forger)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _count(prom_url: str, expr: str) -> float:
    url = f"{prom_url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        result = json.load(resp)["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def _analyse(prom_url: str, victim: Any, end: float, **overrides: Any) -> JobResult:
    settings = Settings(prometheus_url=prom_url, step=STEP, **overrides)
    (result,) = Analyzer.from_settings(settings).analyze_jobs(
        [JobRequest(victim.namespace, victim.name, victim.start, end)]
    )
    return result


def _what_b_sees(result: JobResult) -> dict[str, Any]:
    """The analysis input and outcome of team B's Job, comparable with ==."""
    window = result.window
    assert window is not None
    pods = {
        p.pod: (
            p.node,
            p.gpu_count,
            {k: [None if math.isnan(v) else v for v in np.asarray(s)] for k, s in p.signals.items()},
        )
        for p in window.pods
    }
    status = result.status
    return {
        "pods": pods,
        "bottleneck": status.bottleneck,
        "confidence": status.confidence,
        "classes": status.probabilities,
    }


def test_a_pod_of_another_namespace_cannot_change_a_jobs_analysis(
    start_prometheus: Any, victim: Any, attacker: str, tmp_path: Path
) -> None:
    path = tmp_path / "team-b.om"
    with path.open("w") as out:
        write_openmetrics([victim], out)
    clean = start_prometheus(path)
    attacked = start_prometheus(
        path,
        scrape_targets={"team-a-monitor": [attacker]},  # team A's own monitor: honor_labels true, its own job
        scrape_interval=1.0,
        scrape_configs=[_podmonitor_scrape_config(attacker)],
    )
    ns, pod = victim.namespace, victim.pods[0].pod
    deadline = time.monotonic() + 60
    # Both scrape paths have delivered the forged series, as they would land in a cluster's Prometheus.
    while time.monotonic() < deadline:
        via_own_job = _count(
            attacked.url, f'count(DCGM_FI_DEV_GPU_UTIL{{namespace="{ns}",pod="{pod}",job="team-a-monitor"}})'
        )
        via_podmonitor = _count(
            attacked.url,
            f'count(bottleneck_sidecar_info{{exported_namespace="{ns}",exported_pod="{pod}",namespace="team-a",'
            'pod="innocent-0",job="bottleneck-collector"})',
        )
        if via_own_job and via_podmonitor:
            break
        time.sleep(0.5)
    assert via_own_job and via_podmonitor, "the forged series never reached Prometheus"
    time.sleep(2 * STEP)  # the forged samples cover the window's last steps
    end = time.time()

    expected = _what_b_sees(_analyse(clean.url, victim, end))
    assert expected["pods"], "team B's Job has no pods in its own data"
    assert _what_b_sees(_analyse(attacked.url, victim, end)) == expected
    # The attack is real: without the scrape-job restriction the forged series are read as B's.
    unguarded = _what_b_sees(_analyse(attacked.url, victim, end, scrape_jobs={}))
    assert unguarded != expected
    assert f"{victim.name}-forged-0" in unguarded["pods"]
    # doctor names the scrape jobs whose series are left unread, for an installation whose own jobs differ.
    settings = Settings(prometheus_url=attacked.url)
    notes = check(PrometheusClient(settings), settings.labels, end).notes
    assert any("dcgm series under scrape job(s)" in n and "team-a-monitor" in n for n in notes), notes
