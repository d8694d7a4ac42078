"""kopf's errors at the handler boundary: retried when a service is unavailable, final when refused.

The operator runs through KopfRunner against the Kubernetes emulator; the faults are the
emulator's own answers (a 403 on creating reports) and an analysis source that is unavailable at
first. The stand-in analyzer is test_mechanics.py's: these tests are about the handlers alone.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for
from test_mechanics import EchoAnalyzer

from bottleneck_operator.handlers import operator as handlers
from bottleneck_operator.telemetry.errors import PrometheusUnavailable
from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body

NOW = time.time()


def test_an_unavailable_source_at_startup_is_retried_by_kopf(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handlers, "RETRY_DELAY", 0.5)
    analyzer = EchoAnalyzer()
    calls: list[float] = []

    def factory() -> Any:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise PrometheusUnavailable("Prometheus at http://prometheus:9090 answered HTTP 503", status=503)
        return analyzer

    cluster.create(JOBS, "ml", job_body("ml", "train-late", start=NOW - 600))
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=factory) as runner:
        wait_for("a verdict after the retried start", lambda: reports(cluster).get("train-late", {}).get("status"))
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.5
    assert "cannot start the analysis" in runner.output and "HTTP 503" in runner.output


def test_a_refused_report_is_permanent_for_the_handler_and_the_pass_loop_tries_again(cluster: LocalCluster) -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403, "message": "forbidden by RBAC"}
    refused = cluster.emulator[
        lambda req: str(req.method).upper().endswith("POST") and "bottleneckreports" in req.url.path
    ][:2]
    refused << 403 << status
    cluster.create(JOBS, "ml", job_body("ml", "train-denied", start=NOW - 600))
    analyzer = EchoAnalyzer()
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer) as runner:
        # Once the two refusals are spent, the pass loop's retry creates the report.
        wait_for("the report once the API allows it", lambda: reports(cluster).get("train-denied", {}).get("status"))
    output = runner.output
    # kopf's own line for a PermanentError: logged against the workload, not retried by kopf.
    assert "failed permanently: cannot create the report" in output and "forbidden by RBAC" in output
