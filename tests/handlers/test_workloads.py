"""The training operators' workloads: PyTorchJob, MPIJob, JobSet and TrainJob on kmock's emulator.

Each kind is installed from its vendored CRD (tests/data/crds/); statuses are validated against the
CRD's schema before they are written. The analyzer is a stand-in that answers every workload with
a per-pod breakdown named the way each training operator names its pods (the pod discovery itself
runs against a real Prometheus in test_workload_pods.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for
from workload_support import (
    api_version,
    child_jobs_status,
    condition,
    create,
    install_crd,
    kubeflow_status,
    set_status,
    ts,
    validate_status,
)

from bottleneck_operator.controller.reports_api import ReportsApi
from bottleneck_operator.controller.workloads import BY_KIND, PYTORCHJOB, replica_type
from bottleneck_operator.reports import AnalysisWindow, PodBreakdown, ReportStatus, rfc3339
from bottleneck_operator.webhook.handlers import current_context
from bottleneck_operator_dev.demo.cluster import EVENTS, JOBS, LocalCluster, job_body

NOW = float(int(time.time()))  # whole seconds, as the API writes times
START = NOW - 600
# The pods each training operator would create for a workload named "w".
PODS = {
    "PyTorchJob": ["w-master-0", "w-worker-0", "w-worker-1"],
    "MPIJob": ["w-launcher", "w-worker-0"],
    "JobSet": ["w-node-0-0-x7k2p", "w-node-1-0-q9zzt"],
    "TrainJob": ["w-dataset-initializer-0-0-a1b2c", "w-node-0-0-d3e4f"],
}


@dataclass
class _Result:
    request: Any
    status: ReportStatus


class PodsAnalyzer:
    """Answers GPU for every workload, with one breakdown entry per pod its operator would create."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}
        self.queries_issued = 0

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> list[_Result]:
        out = []
        for r in requests:
            template = PODS.get(self.kinds.get(r.job, ""), [])
            pods = [PodBreakdown(pod=r.job + p[1:], bottleneck="GPU", confidence=0.9, node="n1") for p in template]
            window = AnalysisWindow(start=rfc3339(r.start), end=rfc3339(r.end), seconds=r.end - r.start)
            status = ReportStatus(phase=phase, bottleneck="GPU", confidence=0.9, window=window, pods=pods)
            out.append(_Result(r, status))
        return out


def _kind(key: str) -> str:
    """The kind of a CRD key of workload_support.FILES ("MPIJob/v1" is an MPIJob)."""
    return key.split("/")[0]


def _running_status(kind: str) -> dict[str, Any]:
    if _kind(kind) in ("PyTorchJob", "MPIJob"):
        return kubeflow_status(START)
    status = child_jobs_status(kind)
    status["conditions"] = [condition("Created" if kind == "TrainJob" else "StartupPolicyCompleted", START)]
    return status


def _ended_status(kind: str, end: float, *, failed: bool = False) -> dict[str, Any]:
    if _kind(kind) in ("PyTorchJob", "MPIJob"):
        return kubeflow_status(START, end=end, failed=failed)
    status = child_jobs_status(kind, end_at=end, failed=failed)
    first = condition("Created" if kind == "TrainJob" else "StartupPolicyCompleted", START)
    status["conditions"] = [first, *status["conditions"]]
    return status


@pytest.mark.parametrize("kind", ["PyTorchJob", "MPIJob", "MPIJob/v1", "JobSet", "TrainJob"])
def test_each_kind_reads_its_own_status(kind: str) -> None:
    phase = BY_KIND[_kind(kind)].phase
    meta = {"creationTimestamp": ts(START - 30)}
    assert phase(None, meta) == ("Pending", None, None)
    running = validate_status(kind, _running_status(kind))
    got, start, end = phase(running, meta)
    assert (got, end) == ("Running", None)
    assert start is not None and abs(start - START) <= 5
    done = validate_status(kind, _ended_status(kind, NOW - 60))
    assert phase(done, meta)[0] == "Completed" and phase(done, meta)[2] == pytest.approx(NOW - 60, abs=1)
    failed = validate_status(kind, _ended_status(kind, NOW - 30, failed=True))
    assert phase(failed, meta)[0] == "Failed" and phase(failed, meta)[2] == pytest.approx(NOW - 30, abs=1)
    suspended = {**running, "conditions": [condition("Suspended", START)]}
    if _kind(kind) in ("PyTorchJob", "MPIJob"):
        suspended.pop("startTime")
    assert phase(validate_status(kind, suspended), meta) == ("Suspended", None, None)


def test_replica_types_follow_each_operators_pod_names() -> None:
    assert [replica_type("PyTorchJob", "w", p) for p in PODS["PyTorchJob"]] == ["master", "worker", "worker"]
    assert [replica_type("MPIJob", "w", p) for p in PODS["MPIJob"]] == ["launcher", "worker"]
    assert [replica_type("JobSet", "w", p) for p in PODS["JobSet"]] == ["node", "node"]
    assert [replica_type("TrainJob", "w", p) for p in PODS["TrainJob"]] == ["dataset-initializer", "node"]
    assert replica_type("MPIJob", "w", "w-launcher-6cd4n") == "launcher"
    assert replica_type("Job", "w", "w-abcde") is None
    assert replica_type("JobSet", "w", "w-stray") is None  # no indices: not a child Job's pod
    assert replica_type("PyTorchJob", "w", "other-worker-0") is None


def test_workloads_get_reports_named_after_them(cluster: LocalCluster) -> None:
    analyzer = PodsAnalyzer()
    for kind in ("PyTorchJob", "MPIJob"):
        install_crd(cluster, kind)
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer):
        for kind in ("PyTorchJob", "MPIJob"):
            name = f"{kind.lower()}-a"
            analyzer.kinds[name] = kind
            created = create(cluster, kind, "ml", name)
            set_status(cluster, kind, "ml", name, _running_status(kind))
            create(cluster, kind, "ml", f"{kind.lower()}-plain", profile=None)
            report = wait_for(f"a verdict on {name}", lambda n=name: _verdict(cluster, n))
            ref = report["spec"]["jobRef"]
            assert ref == {
                "name": name,
                "uid": created["metadata"]["uid"],
                "kind": kind,
                "apiVersion": api_version(kind),
            }
            assert report["status"]["phase"] == "Running"
            types = {p["pod"]: p.get("replicaType") for p in report["status"]["pods"]}
            expected = {name + p[1:]: replica_type(kind, "w", p) for p in PODS[kind]}
            assert types == expected
            assert f"{kind.lower()}-plain" not in reports(cluster)
        # The Job ends: the report follows the workload's own conditions to its final phase.
        set_status(cluster, "PyTorchJob", "ml", "pytorchjob-a", _ended_status("PyTorchJob", time.time() - 1))
        wait_for("the final report", lambda: _phase(cluster, "pytorchjob-a") == "Completed")
        events = [
            e
            for e in cluster.list(EVENTS, "ml")
            if (e.get("involvedObject") or {}).get("kind") == "PyTorchJob" and e["reason"] == "ReportCreated"
        ]
        assert events and events[0]["involvedObject"]["name"] == "pytorchjob-a"


def test_a_crd_installed_later_is_noticed(cluster: LocalCluster) -> None:
    analyzer = PodsAnalyzer()
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer) as runner:
        # No training CRD at all: the operator starts and serves Jobs.
        cluster.create(JOBS, "ml", job_body("ml", "plain-job", start=START))
        wait_for("a verdict on a plain Job", lambda: _verdict(cluster, "plain-job"))
        for kind in ("JobSet", "TrainJob"):
            install_crd(cluster, kind)
            name = f"{kind.lower()}-late"
            analyzer.kinds[name] = kind
            create(cluster, kind, "ml", name)
            set_status(cluster, kind, "ml", name, _running_status(kind))
            report = wait_for(f"a verdict on {name}", lambda n=name: _verdict(cluster, n))
            assert report["spec"]["jobRef"]["kind"] == kind
            assert {p.get("replicaType") for p in report["status"]["pods"]} == (
                {"node"} if kind == "JobSet" else {"dataset-initializer", "node"}
            )
        # Trainer creates a JobSet of the TrainJob's name, owned by it, and may copy the annotation:
        # the TrainJob keeps its report (no two objects of one name fighting over it). The same for a
        # JobSet's child Job.
        trainjob_uid = reports(cluster, "ml")["trainjob-late"]["spec"]["jobRef"]["uid"]
        owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "trainjob-late"}
        create(cluster, "JobSet", "ml", "trainjob-late", owners=[{**owner, "uid": trainjob_uid, "controller": True}])
        child = job_body("ml", "jobset-late-node-0", start=START)
        child["metadata"]["ownerReferences"] = [
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "jobset-late", "uid": "u1"}
        ]
        cluster.create(JOBS, "ml", child)
        time.sleep(2.0)  # two passes
        ref = reports(cluster, "ml")["trainjob-late"]["spec"]["jobRef"]
        assert (ref["kind"], ref["uid"]) == ("TrainJob", trainjob_uid)
        assert "jobset-late-node-0" not in reports(cluster, "ml")
        set_status(cluster, "TrainJob", "ml", "trainjob-late", _ended_status("TrainJob", time.time() - 1, failed=True))
        wait_for("the failed TrainJob's final report", lambda: _phase(cluster, "trainjob-late") == "Failed")
    assert runner.exception is None


def test_an_mpijob_of_training_operator_v1_is_profiled_too(cluster: LocalCluster) -> None:
    # Clusters that kept Training Operator v1 serve MPIJob as kubeflow.org/v1, not the MPI Operator's v2beta1.
    analyzer = PodsAnalyzer()
    install_crd(cluster, "MPIJob/v1")
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer) as runner:
        analyzer.kinds["hpl"] = "MPIJob"
        created = create(cluster, "MPIJob/v1", "ml", "hpl")
        set_status(cluster, "MPIJob/v1", "ml", "hpl", _running_status("MPIJob/v1"))
        report = wait_for("a verdict on the v1 MPIJob", lambda: _verdict(cluster, "hpl"))
        ref = report["spec"]["jobRef"]
        assert (ref["apiVersion"], ref["kind"], ref["uid"]) == ("kubeflow.org/v1", "MPIJob", created["metadata"]["uid"])
        assert {p.get("replicaType") for p in report["status"]["pods"]} == {"launcher", "worker"}
    assert runner.exception is None


def test_a_job_and_a_pytorchjob_of_one_name_keep_their_own_reports(cluster: LocalCluster) -> None:
    analyzer = PodsAnalyzer()
    install_crd(cluster, "PyTorchJob")
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer) as runner:
        job = cluster.create(JOBS, "ml", job_body("ml", "train", start=START))
        wait_for("the Job's verdict", lambda: _verdict(cluster, "train"))
        created = create(cluster, "PyTorchJob", "ml", "train")
        set_status(cluster, "PyTorchJob", "ml", "train", _running_status("PyTorchJob"))
        wait_for("the PyTorchJob's verdict", lambda: _verdict(cluster, "train-pytorchjob"))
        refs = {name: r["spec"]["jobRef"] for name, r in reports(cluster, "ml").items()}
        assert (refs["train"]["kind"], refs["train"]["uid"]) == ("Job", job["metadata"]["uid"])
        assert (refs["train-pytorchjob"]["kind"], refs["train-pytorchjob"]["uid"]) == (
            "PyTorchJob",
            created["metadata"]["uid"],
        )
        # Each follows its own workload: the PyTorchJob ends, the Job runs on.
        set_status(cluster, "PyTorchJob", "ml", "train", _ended_status("PyTorchJob", time.time() - 1))
        wait_for("the PyTorchJob's final report", lambda: _phase(cluster, "train-pytorchjob") == "Completed")
        time.sleep(1.0)  # a pass more
        assert _phase(cluster, "train") == "Running"
        assert reports(cluster, "ml")["train"]["spec"]["jobRef"]["uid"] == job["metadata"]["uid"]
    assert runner.exception is None
    # After a restart each workload adopts its own report again: no third report, no new Event.
    created_events = len([e for e in cluster.list(EVENTS, "ml") if e["reason"] == "ReportCreated"])
    with run_operator(fast_settings("http://127.0.0.1:9"), analyzer_factory=lambda: analyzer) as runner:
        time.sleep(2.0)  # two passes
        assert sorted(reports(cluster, "ml")) == ["train", "train-pytorchjob"]
        assert _phase(cluster, "train-pytorchjob") == "Completed" and _phase(cluster, "train") == "Running"
    assert runner.exception is None
    assert len([e for e in cluster.list(EVENTS, "ml") if e["reason"] == "ReportCreated"]) == created_events == 2


def _verdict(cluster: LocalCluster, name: str) -> dict[str, Any] | None:
    report = reports(cluster, "ml").get(name)
    return report if report and (report.get("status") or {}).get("bottleneck") else None


def _phase(cluster: LocalCluster, name: str) -> str | None:
    return ((reports(cluster, "ml").get(name) or {}).get("status") or {}).get("phase")


def test_the_reports_client_reads_a_workload(cluster: LocalCluster) -> None:
    install_crd(cluster, "PyTorchJob")
    created = create(cluster, "PyTorchJob", "ml", "direct")

    async def read() -> tuple[Any, Any]:
        api = ReportsApi(lambda: SimpleNamespace(server=cluster.url, token="t"))  # a ConnectionInfo's attributes
        try:
            return await api.get_workload(PYTORCHJOB, "ml", "direct"), await api.get_workload(PYTORCHJOB, "ml", "nope")
        finally:
            await api.close()

    found, missing = asyncio.run(read())
    assert found["metadata"]["uid"] == created["metadata"]["uid"] and missing is None


def test_the_webhook_reads_an_mpijob_in_the_version_the_cluster_serves(cluster: LocalCluster) -> None:
    # Only Training Operator v1's MPIJob is installed: the read of the MPI Operator's v2beta1 finds
    # nothing, the v1 read finds the workload (a pod admitted before the watch brought it).
    install_crd(cluster, "MPIJob/v1")
    created = create(cluster, "MPIJob/v1", "ml", "hpl")

    async def read() -> tuple[Any, Any]:
        api = ReportsApi(lambda: SimpleNamespace(server=cluster.url, token="t"))
        state = SimpleNamespace(jobs={}, api=api, namespace_levels={}, poster=None, settings=fast_settings("http://x"))
        try:
            ctx = current_context(SimpleNamespace(state=state))
            assert ctx.fetch is not None
            return await ctx.fetch("ml", "MPIJob", "hpl"), await ctx.fetch("ml", "MPIJob", "nope")
        finally:
            await api.close()

    found, missing = asyncio.run(read())
    assert found["apiVersion"] == "kubeflow.org/v1" and found["metadata"]["uid"] == created["metadata"]["uid"]
    assert missing is None
