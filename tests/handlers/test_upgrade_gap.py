"""Jobs admitted while the webhook was down (an upgrade, a crash): their reports say they lack the collector.

``failurePolicy: Ignore`` admits such Jobs unchanged. The operator tells them from Jobs the webhook
injected (their template carries the collector label) and from Jobs it left alone on purpose (the
Pod Security annotation), and marks only the first kind, with a condition and a data-quality note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for

from bottleneck_operator.controller.jobs import NO_COLLECTOR, missed_by_webhook
from bottleneck_operator.reports import AnalysisWindow, DataQualityStatus, ReportStatus, rfc3339
from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body

NOW = time.time()


@dataclass
class _Result:
    request: Any
    status: ReportStatus


class _Analyzer:
    queries_issued = 0

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> list[_Result]:
        quality = DataQualityStatus(families=["dcgm"], missing_families=["sidecar"], coverage=1.0, pods=1, gpus=1)
        return [
            _Result(
                r,
                ReportStatus(
                    phase=phase,
                    bottleneck="GPU",
                    confidence=0.9,
                    data_quality=quality,
                    window=AnalysisWindow(start=rfc3339(r.start), end=rfc3339(r.end), seconds=r.end - r.start),
                ),
            )
            for r in requests
        ]


def _job(name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Any:
    body = job_body("ml", name, start=NOW - 600)
    body["spec"]["template"]["metadata"] = {"labels": labels or {}, "annotations": annotations or {}}
    return body


def _condition(report: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in report["status"].get("conditions", []) if c["type"] == "CollectorInjected"), None)


def test_jobs_the_webhook_missed_are_marked(cluster: LocalCluster) -> None:
    cluster.create(JOBS, "ml", _job("missed"))
    cluster.create(JOBS, "ml", _job("injected", labels={"bottleneck.dev/collector": "true"}))
    cluster.create(JOBS, "ml", _job("restricted", annotations={"bottleneck.dev/collector-skipped": "pod-security"}))
    opted_out = _job("opted-out")
    opted_out["metadata"]["annotations"]["bottleneck.dev/sidecar"] = "false"
    cluster.create(JOBS, "ml", opted_out)
    settings = fast_settings("http://127.0.0.1:9", webhook_enabled=True)  # enabled, but nobody serves it
    with run_operator(settings, analyzer_factory=_Analyzer):
        for name in ("missed", "injected", "restricted", "opted-out"):
            wait_for(
                f"a verdict on {name}",
                lambda n=name: (reports(cluster).get(n) or {}).get("status", {}).get("bottleneck"),
            )
        got = reports(cluster)
    condition = _condition(got["missed"])
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "WebhookUnavailable")
    assert "created while the webhook was unavailable" in condition["message"]
    assert NO_COLLECTOR in got["missed"]["status"]["dataQuality"]["notes"]
    for name in ("injected", "restricted", "opted-out"):
        assert _condition(got[name]) is None, name
        assert NO_COLLECTOR not in got[name]["status"]["dataQuality"].get("notes", []), name


def test_no_mark_when_the_webhook_is_turned_off(cluster: LocalCluster) -> None:
    cluster.create(JOBS, "ml", _job("no-webhook"))
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=_Analyzer):
        wait_for("a verdict", lambda: (reports(cluster).get("no-webhook") or {}).get("status", {}).get("bottleneck"))
        assert _condition(reports(cluster)["no-webhook"]) is None


@pytest.mark.parametrize(
    ("template", "missed"),
    [({}, True), ({"labels": {"bottleneck.dev/collector": "true"}}, False), ({"labels": None}, True)],
)
def test_missed_by_webhook(template: dict[str, Any], missed: bool) -> None:
    body = job_body("ml", "j", start=None)
    body["spec"]["template"]["metadata"] = template
    assert missed_by_webhook(body) is missed
    assert missed_by_webhook(job_body("ml", "j", start=None, profile=None)) is False
