"""Handler mechanics with a stand-in analyzer (no Prometheus): reports, events, annotations, restarts.

The verdicts themselves are tested against the real pipeline and a real Prometheus in
test_verdicts.py; here the analyzer only echoes a class per Job, so these tests isolate what the
operator does with the Kubernetes API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from operator_harness import events_for, fast_settings, reports, run_operator, wait_for

from bottleneck_operator.reports import AnalysisWindow, ReportStatus, rfc3339
from bottleneck_operator_dev.demo.cluster import JOBS, REPORTS, LocalCluster, job_body, job_status


@dataclass
class _Result:
    request: Any
    status: ReportStatus


class EchoAnalyzer:
    """Answers each Job with the class named in ``classes`` (default GPU); can be made to fail."""

    def __init__(self) -> None:
        self.classes: dict[str, str] = {}
        self.calls: list[tuple[str, int]] = []
        self.queries_issued = 0
        self.fail: Exception | None = None

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> list[_Result]:
        if self.fail is not None:
            raise self.fail
        self.calls.append((phase, len(requests)))
        self.queries_issued += 3
        out = []
        for r in requests:
            cls = self.classes.get(r.job, "GPU")
            window = AnalysisWindow(start=rfc3339(r.start), end=rfc3339(r.end), seconds=r.end - r.start)
            out.append(_Result(r, ReportStatus(phase=phase, bottleneck=cls, confidence=0.9, window=window)))
        return out


NOW = time.time()


def _status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    """A report's status, empty until the operator has written one (a poll may see the report first)."""
    return dict(reports(cluster).get(name, {}).get("status") or {})


def _job(cluster: LocalCluster, name: str, *, ns: str = "ml", **kw: Any) -> dict[str, Any]:
    kw.setdefault("start", NOW - 600)
    return cluster.create(JOBS, ns, job_body(ns, name, **kw))


def test_report_lifecycle_events_and_annotations(cluster: LocalCluster) -> None:
    analyzer = EchoAnalyzer()
    settings = fast_settings("http://127.0.0.1:9")
    _job(cluster, "train-a")
    _job(cluster, "plain", profile=None)
    _job(cluster, "oddly", profile="yes please")
    with run_operator(settings, analyzer_factory=lambda: analyzer):
        report = wait_for(
            "a verdict on train-a", lambda: reports(cluster).get("train-a", {}).get("status", {}).get("bottleneck")
        )
        assert report == "GPU"
        rep = reports(cluster)["train-a"]
        assert rep["spec"]["jobRef"]["name"] == "train-a"
        assert rep["spec"]["jobRef"]["uid"]
        assert "ownerReferences" not in rep["metadata"]
        assert rep["metadata"]["labels"]["bottleneck.dev/job"] == "train-a"
        assert rep["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "bottleneck-operator"
        assert "plain" not in reports(cluster) and "oddly" not in reports(cluster)
        warn = wait_for(
            "a warning on oddly", lambda: [e for e in events_for(cluster, "oddly") if e["type"] == "Warning"]
        )
        assert "yes please" in warn[0]["message"]
        wait_for(
            "a created event", lambda: [e for e in events_for(cluster, "train-a") if e["reason"] == "ReportCreated"]
        )

        # a verdict change posts an Event
        analyzer.classes["train-a"] = "IO"
        ev = wait_for(
            "a verdict change event",
            lambda: [e for e in events_for(cluster, "train-a") if "changed from GPU to IO" in e["message"]],
        )
        assert ev[0]["type"] == "Normal"

        # completion finalises
        cluster.patch(JOBS, "ml", "train-a", {"status": job_status(start=NOW - 600, end=NOW - 10)}, sub="status")
        final = wait_for("the final phase", lambda: _status(cluster, "train-a").get("phase") == "Completed")
        assert final
        status = reports(cluster)["train-a"]["status"]
        conds = {c["type"]: c for c in status["conditions"]}
        assert conds["Ready"]["status"] == "True" and conds["Ready"]["reason"] == "Finalised"
        assert status["window"]["end"] == rfc3339(NOW - 10)
    # the Job itself was never written by the operator
    job = cluster.get(JOBS, "ml", "train-a")
    assert job is not None and set(job["metadata"].get("annotations", {})) == {"bottleneck.dev/profile"}
    assert "finalizers" not in job["metadata"]


@pytest.mark.parametrize("ended_while_down", [True, False])
def test_restart_resumes_without_duplicates(cluster: LocalCluster, ended_while_down: bool) -> None:
    analyzer = EchoAnalyzer()
    settings = fast_settings("http://127.0.0.1:9")
    _job(cluster, "long")
    with run_operator(settings, analyzer_factory=lambda: analyzer):
        wait_for("a verdict", lambda: reports(cluster).get("long", {}).get("status", {}).get("bottleneck"))
    created_before = len([e for e in events_for(cluster, "long") if e["reason"] == "ReportCreated"])
    ended = {"status": job_status(start=NOW - 600, end=NOW - 5)}
    if ended_while_down:
        cluster.patch(JOBS, "ml", "long", ended, sub="status")
    with run_operator(settings, analyzer_factory=lambda: analyzer):
        if not ended_while_down:
            # The restarted operator adopts the report and analyses again first, then sees the Job end.
            before = reports(cluster)["long"]["status"]["lastAnalysisTime"]
            wait_for("a pass after the restart", lambda: _status(cluster, "long").get("lastAnalysisTime") != before)
            cluster.patch(JOBS, "ml", "long", ended, sub="status")
        wait_for("finalised after restart", lambda: _status(cluster, "long").get("phase") == "Completed")
    assert len(cluster.list(REPORTS)) == 1
    assert len([e for e in events_for(cluster, "long") if e["reason"] == "ReportCreated"]) == created_before == 1


def test_retention_deletes_old_finished_reports(cluster: LocalCluster) -> None:
    analyzer = EchoAnalyzer()
    clock = [NOW]
    settings = fast_settings("http://127.0.0.1:9", report_retention=4.0)
    _job(cluster, "short", start=NOW - 300)
    _job(cluster, "keep", start=NOW - 300)
    with run_operator(settings, analyzer_factory=lambda: analyzer, clock=lambda: clock[0]) as runner:
        wait_for("reports", lambda: len(reports(cluster)) == 2)
        cluster.patch(JOBS, "ml", "short", {"status": job_status(start=NOW - 300, end=NOW - 1)}, sub="status")
        wait_for("the final report", lambda: _status(cluster, "short").get("phase") == "Completed")
        clock[0] = NOW + 10  # the retention has passed for "short"; "keep" still runs
        wait_for("the expired report deleted", lambda: "short" not in reports(cluster))
        assert "keep" in reports(cluster)
        # The Job is still there: a later event must not bring its report back.
        cluster.patch(JOBS, "ml", "short", {"metadata": {"labels": {"touched": "yes"}}})
        time.sleep(1.5)
        assert "short" not in reports(cluster)
    # The label change reached the handler after the deletion (kopf logs each handled event), so the
    # report stayed away because the operator chose so, not because the event was never seen.
    log = runner.output
    deleted_at = log.index("ml/short: report deleted after the retention period")
    assert "[ml/short] Handler 'profiled_job' succeeded" in log[deleted_at:]
