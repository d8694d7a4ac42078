"""The operator end to end with the real pipeline: simulated telemetry in a real Prometheus.

The Jobs replay recorded (simulated, backfilled) runs, so the operator's clock is set to their
time: "now" for a pass is the replayed instant, while the watch, the API calls and the Events are
live. Every verdict here comes from the shipped model over genuine PromQL answers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from operator_harness import events_for, fast_settings, reports, run_operator, wait_for

from bottleneck_operator.reports import rfc3339
from bottleneck_operator_dev.demo.cluster import JOBS, REPORTS, LocalCluster, job_body, job_status
from prom_proxy import PromProxy

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


class ReplayClock:
    """The operator's "now", moved by the test."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return dict(reports(cluster).get(name, {}).get("status") or {})


def _conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def test_verdicts_change_events_completion_and_restart(cluster: LocalCluster, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs
    running, finished, ignored = jobs[:-2], jobs[-2], jobs[-1]
    t0 = min(j.start for j in jobs)
    clock = ReplayClock(t0 + 90)  # too early for a verdict: every report starts Unknown
    settings = fast_settings(sim_dataset.prom.url, window=900.0)
    for j in running:
        cluster.create(JOBS, j.namespace, job_body(j.namespace, j.name, start=j.start))
    cluster.create(
        JOBS, ignored.namespace, job_body(ignored.namespace, ignored.name, start=ignored.start, profile=None)
    )

    with run_operator(settings, clock=clock):
        wait_for(
            "first (Unknown) verdicts",
            lambda: all(_status(cluster, j.name).get("bottleneck") == "Unknown" for j in running),
        )
        first = _status(cluster, running[0].name)
        assert _conditions(first)["Ready"]["status"] == "False"

        clock.t = max(j.end for j in jobs) - 5
        wait_for(
            "class verdicts",
            lambda: all(_status(cluster, j.name).get("bottleneck") not in (None, "Unknown") for j in running),
            timeout=60,
        )
        got = {j.name: _status(cluster, j.name)["bottleneck"] for j in running}
        right = Counter(j.label.value for j in running if got[j.name] == j.label.value)
        # Every class present among the Jobs has at least one Job classified right.
        assert set(right) == {j.label.value for j in running}, (got, [(j.name, j.label.value) for j in running])
        for j in running:
            status = _status(cluster, j.name)
            assert status["phase"] == "Running"
            assert status["dataQuality"]["pods"] == len(j.pods)
            assert status["evidence"] and status["probabilities"]
            assert len(status["timeline"]) >= 2
            assert _conditions(status)["MetricsAvailable"]["status"] == "True"
            wait_for(  # posted after the status is written
                f"{j.name}'s change from Unknown",
                lambda j=j: [
                    e
                    for e in events_for(cluster, j.name)
                    if e["reason"] == "BottleneckChanged" and f"from Unknown to {got[j.name]}" in e["message"]
                ],
            )
        assert ignored.name not in reports(cluster)

        # A Job that completes is finalised over its whole run.
        done = running[0]
        cluster.patch(
            JOBS, done.namespace, done.name, {"status": job_status(start=done.start, end=done.end)}, sub="status"
        )
        wait_for("the final report", lambda: _status(cluster, done.name).get("phase") == "Completed")
        final = _status(cluster, done.name)
        assert final["window"]["start"] == rfc3339(done.start) and final["window"]["end"] == rfc3339(done.end)
        assert _conditions(final)["Ready"]["reason"] == "Finalised"
        # the event is posted after the status is written: wait for it as for the status
        wait_for(
            "the ReportFinalised event",
            lambda: [e for e in events_for(cluster, done.name) if e["reason"] == "ReportFinalised"],
        )

    # While the operator is down: one Job ends, one that already ended appears.
    late = running[1]
    cluster.patch(
        JOBS,
        late.namespace,
        late.name,
        {"status": job_status(start=late.start, end=late.end, failed=True)},
        sub="status",
    )
    cluster.create(
        JOBS, finished.namespace, job_body(finished.namespace, finished.name, start=finished.start, end=finished.end)
    )
    count_before = len(cluster.list(REPORTS))
    with run_operator(settings, clock=clock):
        wait_for("the Job that failed while down", lambda: _status(cluster, late.name).get("phase") == "Failed")
        wait_for("the Job that ended before", lambda: _status(cluster, finished.name).get("phase") == "Completed")
    names = [r["metadata"]["name"] for r in cluster.list(REPORTS)]
    assert len(names) == len(set(names)) == count_before + 1
    # finalised over its whole run: the model read it (a class, or a plain lack of confidence), not a
    # placeholder without data
    fin = _status(cluster, finished.name)
    assert fin["probabilities"] and fin.get("abstention") in (None, "LowConfidence"), fin.get("reason")
    created = Counter(e["involvedObject"]["name"] for e in cluster.list("v1/events") if e["reason"] == "ReportCreated")
    assert set(created.values()) == {1}


def test_prometheus_down_and_back(cluster: LocalCluster, sim_dataset: Any) -> None:
    job = sim_dataset.jobs[0]
    clock = ReplayClock(job.end - 5)
    with PromProxy(sim_dataset.prom.url) as proxy:
        settings = fast_settings(proxy.url, window=600.0)
        cluster.create(JOBS, job.namespace, job_body(job.namespace, job.name, start=job.start))
        with run_operator(settings, clock=clock):
            verdict = wait_for("a verdict", lambda: _status(cluster, job.name).get("bottleneck"))
            proxy.down = True
            wait_for(
                "MetricsAvailable=False",
                lambda: _conditions(_status(cluster, job.name)).get("MetricsAvailable", {}).get("status") == "False",
            )
            status = _status(cluster, job.name)
            cond = _conditions(status)["MetricsAvailable"]
            assert cond["reason"] == "PrometheusUnavailable" and cond["message"]
            assert status["bottleneck"] == verdict  # the last verdict is kept
            proxy.down = False
            wait_for(
                "recovery",
                lambda: _conditions(_status(cluster, job.name)).get("MetricsAvailable", {}).get("status") == "True",
            )
            assert _status(cluster, job.name)["bottleneck"] == verdict
