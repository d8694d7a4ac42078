"""Suspended workloads (spec.suspend, the Suspended condition, Kueue's preemption), RayJob and LeaderWorkerSet.

Phases are read from statuses validated against each kind's vendored CRD; the operator runs under
kopf against kmock's emulator with a stand-in analyzer that records which workloads it was asked
about (the pod discovery runs against a real Prometheus in test_workload_pods.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from operator_harness import fast_settings, reports, run_operator, wait_for
from workload_support import condition, create, install_crd, path, set_status, ts, validate_status

from bottleneck_operator.controller.workloads import BY_KIND, job_phase, replica_type, suspended
from bottleneck_operator.reports import AnalysisWindow, ReportStatus, rfc3339
from bottleneck_operator.webhook.workloads import candidates
from bottleneck_operator_dev.demo.cluster import EVENTS, JOBS, LocalCluster, job_body

NOW = float(int(time.time()))
START = NOW - 600
META = {"creationTimestamp": ts(START - 30)}


@dataclass
class _Result:
    request: Any
    status: ReportStatus


class RecordingAnalyzer:
    """Answers GPU for every workload it is asked about, and remembers who was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.queries_issued = 0

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> list[Any]:
        out = []
        for r in requests:
            self.asked.append(r.job)
            window = AnalysisWindow(start=rfc3339(r.start), end=rfc3339(r.end), seconds=r.end - r.start)
            status = ReportStatus(phase=phase, bottleneck="GPU", confidence=0.9, window=window)
            out.append(_Result(r, status))
        return out


def _ray(deployment: str, job: str = "", *, end: float | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"jobDeploymentStatus": deployment, "rayClusterName": "w-x7k2p"}
    if job:
        status["jobStatus"] = job
    if deployment not in ("New", "Initializing"):
        status["startTime"] = ts(START)
    if end is not None:
        status["endTime"] = ts(end)
    return validate_status("RayJob", status)


def test_rayjob_phases() -> None:
    phase = BY_KIND["RayJob"].phase
    assert phase(None, META) == ("Pending", None, None)
    assert phase(_ray("Initializing"), META) == ("Pending", None, None)
    assert phase(_ray("Running", "RUNNING"), META) == ("Running", START, None)
    assert phase(_ray("Complete", "SUCCEEDED", end=NOW - 60), META) == ("Completed", START, NOW - 60)
    assert phase(_ray("Complete", "FAILED", end=NOW - 60), META)[0] == "Failed"
    assert phase(_ray("Failed", end=NOW - 30), META) == ("Failed", START, NOW - 30)
    assert phase(_ray("Suspended"), META) == ("Suspended", None, None)
    assert phase(_ray("Retrying"), META) == ("Pending", None, None)


def test_leaderworkerset_phases() -> None:
    phase = BY_KIND["LeaderWorkerSet"].phase
    assert phase(validate_status("LeaderWorkerSet", {"replicas": 2, "readyReplicas": 0}), META)[0] == "Pending"
    available = {"replicas": 2, "readyReplicas": 2, "conditions": [condition("Available", START)]}
    assert phase(validate_status("LeaderWorkerSet", available), META) == ("Running", START, None)
    # Ready groups without the condition yet: running since the object was made.
    assert phase(validate_status("LeaderWorkerSet", {"readyReplicas": 1}), META) == ("Running", START - 30, None)


def test_a_suspended_batch_job_is_suspended_not_running() -> None:
    # Kueue preempted it: the Job controller writes Suspended=True and keeps the old startTime.
    status = {"startTime": ts(START), "conditions": [condition("Suspended", NOW - 10, reason="JobSuspended")]}
    assert job_phase(status) == ("Suspended", None, None)
    resumed = {"startTime": ts(NOW), "conditions": [condition("Suspended", NOW, "False", reason="JobResumed")]}
    assert job_phase(resumed) == ("Running", NOW, None)
    assert suspended({"spec": {"suspend": True}}) and suspended({"spec": {"runPolicy": {"suspend": True}}})
    assert not suspended({"spec": {"suspend": False}}) and not suspended({})


def test_replica_types_of_ray_and_lws_pods() -> None:
    ray = [
        "w-x7k2p-head",
        "w-x7k2p-head-9zq4t",
        "w-x7k2p-gpu-group-worker-ab12c",
        "w-raycluster-q1w2e-worker-small-zz9x8",
    ]
    assert [replica_type("RayJob", "w", p) for p in ray] == ["head", "head", "gpu-group", "small"]
    assert replica_type("RayJob", "w", "w-k8s2x") == "submitter"  # the submitter Job's pod
    assert replica_type("RayJob", "w", "w-something-else") is None
    assert [replica_type("LeaderWorkerSet", "w", p) for p in ("w-0", "w-0-1", "w-3-12")] == [
        "leader",
        "worker",
        "worker",
    ]
    assert replica_type("LeaderWorkerSet", "w", "w-x") is None


def test_the_webhook_finds_ray_and_lws_workloads_from_their_pods_labels() -> None:
    def pod(labels: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": "p", "labels": labels}}

    assert ("RayJob", "train") in candidates(pod({"ray.io/cluster": "train-x7k2p", "ray.io/node-type": "worker"}))
    assert ("RayJob", "train") in candidates(pod({"ray.io/cluster": "train-raycluster-x7k2p"}))
    by_origin = candidates(pod({"ray.io/cluster": "c", "ray.io/originated-from-cr-name": "job-a"}))
    assert by_origin == [("RayJob", "job-a")]
    assert candidates(
        pod({"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/worker-index": "1"})
    ) == [("LeaderWorkerSet", "serve")]


def _phase(cluster: LocalCluster, name: str) -> str | None:
    return (reports(cluster, "ml").get(name) or {}).get("status", {}).get("phase")


def _suspend(cluster: LocalCluster, kind: str, name: str, value: bool) -> None:
    response = requests.patch(
        f"{cluster.url}{path(kind, 'ml', name)}",
        json={"spec": {"suspend": value}},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    )
    response.raise_for_status()


@pytest.mark.timeout(120)
def test_suspension_shows_in_the_report_and_stops_the_analysis(cluster: LocalCluster) -> None:
    """A RayJob runs, Kueue suspends it (spec.suspend), it resumes; a batch Job arrives already suspended."""
    analyzer = RecordingAnalyzer()
    install_crd(cluster, "RayJob")
    install_crd(cluster, "LeaderWorkerSet")
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer) as runner:
        create(cluster, "RayJob", "ml", "ray-a", spec={"entrypoint": "python train.py"})
        set_status(cluster, "RayJob", "ml", "ray-a", {"jobDeploymentStatus": "Running", "startTime": ts(START)})
        wait_for("a Running report of the RayJob", lambda: _phase(cluster, "ray-a") == "Running")
        assert reports(cluster, "ml")["ray-a"]["spec"]["jobRef"]["kind"] == "RayJob"

        _suspend(cluster, "RayJob", "ray-a", True)
        wait_for("the RayJob's report to say Suspended", lambda: _phase(cluster, "ray-a") == "Suspended")
        ready = next(c for c in reports(cluster, "ml")["ray-a"]["status"]["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "Suspended"
        asked = len(analyzer.asked)
        time.sleep(2.5)  # passes run every second: none asks about a suspended workload
        assert "ray-a" not in analyzer.asked[asked:]

        _suspend(cluster, "RayJob", "ray-a", False)
        wait_for("the resumed RayJob to run again", lambda: _phase(cluster, "ray-a") == "Running")

        job = job_body("ml", "queued", start=START)
        job["spec"]["suspend"] = True
        cluster.create(JOBS, "ml", job)
        wait_for("the suspended Job's report", lambda: _phase(cluster, "queued") == "Suspended")
        assert "queued" not in analyzer.asked
        events = [e for e in cluster.list(EVENTS, "ml") if e["reason"] == "Suspended"]
        assert {e["involvedObject"]["name"] for e in events} >= {"ray-a", "queued"}

        create(cluster, "LeaderWorkerSet", "ml", "serve")
        set_status(cluster, "LeaderWorkerSet", "ml", "serve", {"readyReplicas": 1, "replicas": 1})
        wait_for("a Running report of the LeaderWorkerSet", lambda: _phase(cluster, "serve") == "Running")
    assert runner.exception is None
