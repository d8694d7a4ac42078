"""Hot spots on storage classes and fabrics in the operator: claims and nodes read from kmock's emulator.

The Jobs come through the watch path (``controller.jobs.observe`` with a Job body whose pod
template mounts claims), their analysed windows through the pass's own ``summary.observe``; the
PersistentVolumeClaims and Nodes are objects in the emulated API server, read by the operator's own
client. The verdicts are given: the statistics are tested in test_cluster_hotspots.py, these tests
test that the operator places each Job where the API says it ran.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import kopf
import numpy as np
import pytest
from pydantic import ValidationError

from bottleneck_operator.contract.verdict import Bottleneck, Verdict
from bottleneck_operator.contract.window import JobWindow, PodWindow, SignalBlock
from bottleneck_operator.controller import jobs, places, summary
from bottleneck_operator.controller.reports_api import ReportsApi
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.pipeline import JobRequest, JobResult
from bottleneck_operator.reports import DataQualityStatus, ReportStatus
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import CLAIMS, NODES, SUMMARIES, LocalCluster, job_body

T0 = 1.8e9
NS = "ml"
WORKLOADS = ("resnet", "vit", "bert")  # three strata of comparable runs
FABRIC = "example.com/fabric"
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture()
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        monkeypatch.setenv("KUBECONFIG", str(c.write_kubeconfig(tmp_path / "kubeconfig")))
        yield c


def _claim(namespace: str, name: str, storage_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": "10Ti"}}},
    }  # fmt: skip


def _node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _watched(state: OperatorState, name: str, claims: Sequence[str], namespace: str = NS) -> TrackedJob:
    """A finished Job whose pod template mounts ``claims``, as the watch stream delivers it."""
    body = job_body(namespace, name, start=T0 - 3000, end=T0 + 600)
    pod_spec = body["spec"]["template"]["spec"]
    pod_spec["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    tracked = jobs.observe(state, body, event_type="ADDED")
    assert tracked is not None
    return tracked


def _analysed(state: OperatorState, job: TrackedJob, nodes: Sequence[str], bottleneck: str) -> None:
    """The pass's analysis of one Job: a window with one pod per node, and its verdict."""
    stamps = np.arange(T0, T0 + 600, 50.0)
    pods = tuple(
        PodWindow(pod=f"{job.name}-{i}", node=node, gpu_model="H100", gpu_count=8,
                  signals=SignalBlock.of({"sm_active": np.full(len(stamps), 0.5)}))
        for i, node in enumerate(nodes)
    )  # fmt: skip
    window = JobWindow(namespace=job.namespace, job=job.name, start=T0, end=T0 + 600, step=50.0,
                       timestamps=stamps, pods=pods)  # fmt: skip
    quality = DataQualityStatus(
        families=["dcgm"], missing_families=[], coverage=1.0, pods=len(pods), gpus=8 * len(pods)
    )
    status = ReportStatus(bottleneck=bottleneck, gpu_active=0.5, data_quality=quality)
    request = JobRequest(job.namespace, job.name, T0, T0 + 600)
    verdict = Verdict(bottleneck=Bottleneck(bottleneck), confidence=0.9, probabilities={bottleneck: 0.9})
    summary.observe(
        state, [JobResult(request=request, window=window, verdict=verdict, status=status)], {id(request): job}
    )


def _state(api: ReportsApi, **settings: Any) -> OperatorState:
    config = Settings(prometheus_url="http://127.0.0.1:9", **settings)
    return OperatorState(config, api, lambda: None, clock=lambda: T0 + 600)  # type: ignore[arg-type,return-value]


def _hotspots(cluster: LocalCluster) -> list[tuple[str, str, str, int]]:
    got = cluster.get(SUMMARIES, None, "cluster")
    assert got is not None
    return [(h["dimension"], h["location"], h["symptom"], h["jobs"]) for h in got["status"]["hotSpots"]]


def _gauge(state: OperatorState, dimension: str, symptom: str) -> float | None:
    value = state.metrics.registry.get_sample_value(
        "bottleneck_operator_cluster_hotspots", {"dimension": dimension, "symptom": symptom}
    )
    return float(value) if value is not None else None


def test_a_storage_class_whose_jobs_are_io_bound_is_a_hot_spot(cluster: LocalCluster) -> None:
    # Each workload runs four times on the shared NFS class and four times on local NVMe; every run also
    # mounts a scratch claim of the NVMe class, so the runs on NFS sit on both classes (all of a Job's claims).
    cluster.create(CLAIMS, NS, _claim(NS, "imagenet-nfs", "nfs-shared"))
    cluster.create(CLAIMS, NS, _claim(NS, "imagenet-local", "local-nvme"))
    cluster.create(CLAIMS, NS, _claim(NS, "scratch", "local-nvme"))

    async def scenario() -> OperatorState:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        state = _state(api, rack_node_labels=[], fabric_node_labels=[])
        try:
            for w, workload in enumerate(WORKLOADS):
                for run in range(8):
                    on_nfs = run % 2 == 0
                    claims = ["imagenet-nfs" if on_nfs else "imagenet-local", "scratch"]
                    job = _watched(state, f"{workload}-{run:04d}", claims)
                    # nodes shared by both kinds of runs: the node is not the common factor
                    _analysed(state, job, [f"gpu-node-{(w + run) % 6}"], "IO" if on_nfs else "GPU")
            await summary.refresh(state)
            await summary.refresh(state)  # answered from the cache
        finally:
            await api.close()
        return state

    state = asyncio.run(scenario())
    assert _hotspots(cluster) == [("storage", "nfs-shared", "IO", 12)]
    on_nfs = [d for d in state.cluster.digests(T0 + 600) if d.bottleneck == "IO"]
    assert {d.locations["storage"] for d in on_nfs} == {("local-nvme", "nfs-shared")}
    assert _gauge(state, "storage", "IO") == 1
    assert cluster.emulator is not None
    reads = cluster.emulator.reads
    assert {k: v for k, v in reads.items() if k[0] == "persistentvolumeclaims"} == {
        ("persistentvolumeclaims", NS, c): 1 for c in ("imagenet-nfs", "imagenet-local", "scratch")
    }
    assert not any(k[0] == "nodes" for k in reads), "no node label configured: nodes are never read"


def test_a_node_label_makes_a_fabric_hot_spot(cluster: LocalCluster) -> None:
    # Eight nodes on two fabrics, one zone. Each workload's two-node runs go to one fabric or the other;
    # the runs on fabric ib-a are Interconnect-bound.
    for i in range(8):
        cluster.create(NODES, None, _node(f"gpu-node-{i}", {FABRIC: "ib-a" if i < 4 else "ib-b", ZONE: "zone-1"}))

    async def scenario() -> OperatorState:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        state = _state(api, fabric_node_labels=[FABRIC], rack_node_labels=[ZONE])
        try:
            for w, workload in enumerate(WORKLOADS):
                for run in range(8):
                    on_a = run % 2 == 0
                    first = (w + run) % 4 + (0 if on_a else 4)
                    pair = [f"gpu-node-{first}", f"gpu-node-{(first + 1) % 4 + (0 if on_a else 4)}"]
                    job = _watched(state, f"{workload}-{run:04d}", [])
                    _analysed(state, job, pair, "Interconnect" if on_a else "GPU")
            await summary.refresh(state)
        finally:
            await api.close()
        return state

    state = asyncio.run(scenario())
    assert _hotspots(cluster) == [("fabric", f"{FABRIC}=ib-a", "Interconnect", 12)]
    digests = state.cluster.digests(T0 + 600)
    assert {d.locations["rack"] for d in digests} == {(f"{ZONE}=zone-1",)}
    assert {d.locations["fabric"] for d in digests} == {(f"{FABRIC}=ib-a",), (f"{FABRIC}=ib-b",)}
    assert "storage" not in digests[0].locations  # no claim mounted
    assert _gauge(state, "fabric", "Interconnect") == 1 and _gauge(state, "node", "Interconnect") is None
    assert cluster.emulator is not None
    assert sorted(k[2] for k in cluster.emulator.reads if k[0] == "nodes") == [f"gpu-node-{i}" for i in range(8)]


FORBIDDEN = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
             "message": 'nodes is forbidden: User "system:serviceaccount:ops:bn" cannot get resource "nodes"'}  # fmt: skip


def test_absent_objects_and_permissions_are_logged_once_and_change_nothing_else(
    cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bottleneck_operator.operator")
    # A claim that is gone, a namespace whose claims the operator may not read, nodes it may not read.
    cluster.create(CLAIMS, NS, _claim(NS, "imagenet", "nfs-shared"))
    assert cluster.emulator is not None
    emulator = cluster.emulator
    emulator[lambda req: req.resource is not None and req.resource.plural == "nodes"] << 403 << FORBIDDEN
    locked = {**FORBIDDEN, "message": 'persistentvolumeclaims "data" is forbidden'}
    emulator[lambda req: req.namespace == "locked" and req.resource is not None] << 403 << locked
    clock = [1000.0]

    async def scenario() -> tuple[OperatorState, list[int]]:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        state = _state(api)  # the default node labels: nodes are read
        state.places = places.Places(
            rack_labels=state.operation.rack_node_labels,
            fabric_labels=state.operation.fabric_node_labels,
            clock=lambda: clock[0],
        )
        lookups = []
        try:
            for i in range(4):
                job = _watched(state, f"resnet-{i:04d}", ["imagenet", "gone"])
                _analysed(state, job, [f"gpu-node-{i}", f"gpu-node-{i + 4}"], "IO")
            _analysed(state, _watched(state, "vit-0001", ["data"], namespace="locked"), ["gpu-node-0"], "GPU")
            for _ in range(3):
                await summary.refresh(state)
                lookups.append(state.places.lookups)
            clock[0] += places.DENIED_TTL + 1  # a refusal is asked again later (RBAC may have been fixed)
            await summary.refresh(state)
            lookups.append(state.places.lookups)
        finally:
            await api.close()
        return state, lookups

    state, lookups = asyncio.run(scenario())
    # 8 nodes and 3 claims asked once; then nothing until the refusals expire: the nodes and the locked claim
    assert lookups == [11, 11, 11, 11 + 8 + 1]
    said = [r.getMessage() for r in caplog.records if "said once" in r.getMessage()]
    assert len(said) == 3, said
    refused = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "not allowed" in r.getMessage()
    ]
    assert len(refused) == 2, refused  # a refusal is a warning; a missing claim is routine (info)
    assert any("persistentvolumeclaims/ml/gone does not exist" in m for m in said)
    assert any("reading nodes/gpu-node-" in m and "not allowed (HTTP 403" in m for m in said)
    assert any("reading persistentvolumeclaims/locked/data is not allowed" in m for m in said)
    got = cluster.get(SUMMARIES, None, "cluster")
    assert got is not None and got["status"]["jobs"] == 5  # the summary goes on without those places
    digests = {d.name: d for d in state.cluster.digests(T0 + 600)}
    assert digests["resnet-0000"].locations == {"node": ("gpu-node-0", "gpu-node-4"), "storage": ("nfs-shared",)}
    assert digests["vit-0001"].locations == {"node": ("gpu-node-0",)}


def test_node_label_keys_are_checked_where_they_are_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOTTLENECK_FABRIC_NODE_LABELS", '["example.com/fabric", "example.com/fabric"]')
    monkeypatch.setenv("BOTTLENECK_RACK_NODE_LABELS", "[]")
    settings = Settings()
    assert (
        settings.operation.fabric_node_labels == ("example.com/fabric",) and settings.operation.rack_node_labels == ()
    )
    with pytest.raises(ValidationError, match="rack_node_labels") as refused:
        Settings(rack_node_labels=["topology.kubernetes.io/zone", "rack name"])
    assert "not Kubernetes label keys" in str(refused.value) and "'rack name'" in str(refused.value)
