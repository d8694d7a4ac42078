"""Credentials for Prometheus never reach the logs, the Events or the reports.

Each way of giving them is planted with a recognisable secret: user:password in the URL, a bearer
token file, basic auth in the settings. A proxy in front of the real Prometheus answers 401 unless
the request carries exactly those credentials, so a verdict proves they were used; then it answers
503 and 401, so the error paths write their conditions too. Then every log record (caplog, DEBUG),
every Event and every report on the emulator is searched for the secret, raw and base64-encoded.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for
from test_verdicts import ReplayClock

from bottleneck_operator_dev.demo.cluster import EVENTS, JOBS, LocalCluster, job_body
from prom_proxy import PromProxy, _Handler

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

SECRET = "pl4nted-S3cret"


class _AuthHandler(_Handler):
    """The proxy, answering 401 unless the request carries the expected Authorization header."""

    def _forward(self) -> None:
        if self.headers.get("Authorization") != getattr(self.server, "expected", None) or getattr(
            self.server, "refuse", False
        ):
            self.send_response(401)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"unauthorized")
            return
        super()._forward()

    do_GET = _forward
    do_POST = _forward


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _ways(proxy_url: str, tmp_path: Path) -> dict[str, tuple[dict[str, Any], str]]:
    """Each way of giving credentials: (settings, the Authorization header they must produce)."""
    token = tmp_path / "token"
    token.write_text(SECRET + "\n")
    host = proxy_url.removeprefix("http://")
    return {
        "url": ({"prometheus_url": f"http://alice:{SECRET}@{host}"}, _basic("alice", SECRET)),
        "bearer": ({"prometheus_url": proxy_url, "prometheus_bearer_token_file": token}, f"Bearer {SECRET}"),
        "basic": (
            {"prometheus_url": proxy_url, "prometheus_username": "alice", "prometheus_password": SECRET},
            _basic("alice", SECRET),
        ),
    }


def _leaks(text: str) -> list[str]:
    encoded = base64.b64encode(f"alice:{SECRET}".encode()).decode()
    return [s for s in (SECRET, encoded, SECRET.lower()) if s in text]


def _conditions(cluster: LocalCluster, name: str) -> dict[str, dict[str, Any]]:
    status = reports(cluster).get(name, {}).get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


@pytest.mark.parametrize("way", ["url", "bearer", "basic"])
def test_credentials_never_reach_logs_events_or_reports(
    cluster: LocalCluster, sim_dataset: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, way: str
) -> None:
    job = sim_dataset.jobs[0]
    caplog.set_level(logging.DEBUG)
    with PromProxy(sim_dataset.prom.url) as proxy:
        proxy._server.RequestHandlerClass = _AuthHandler
        overrides, header = _ways(proxy.url, tmp_path)[way]
        proxy._server.expected = header  # type: ignore[attr-defined]
        settings = fast_settings(overrides.pop("prometheus_url"), window=600.0, **overrides)
        cluster.create(JOBS, job.namespace, job_body(job.namespace, job.name, start=job.start))
        with run_operator(settings, clock=ReplayClock(job.end - 5)):
            wait_for(
                "a verdict (the credentials worked)",
                lambda: reports(cluster).get(job.name, {}).get("status", {}).get("bottleneck"),
            )
            proxy.down = True  # 503: the unavailable path
            wait_for(
                "MetricsAvailable=False",
                lambda: _conditions(cluster, job.name).get("MetricsAvailable", {}).get("status") == "False",
            )
            proxy.down = False
            proxy._server.refuse = True  # type: ignore[attr-defined]  # 401: the rejected path
            wait_for("the refusal seen", lambda: "401" in caplog.text, timeout=30)
    assert "bottleneck-operator settings:" in caplog.text  # the operator's own records were captured
    assert _leaks(caplog.text) == []
    assert _leaks(json.dumps(cluster.list(EVENTS))) == []
    assert _leaks(json.dumps(reports(cluster))) == []
