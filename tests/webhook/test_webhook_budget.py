"""The pod webhook stays inside its budget on a slow API server.

Pods are admitted over HTTPS by the real endpoint, each POST with the chart's ``timeoutSeconds`` as
its deadline (what kube-apiserver gives the webhook: past it, the pod goes through without the
collector). The workload is read from kmock's emulator, slowed down per read. Also here: the
workload webhook marks profiled workloads' pod templates, and the owner cache's bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from _webhook_support import Endpoint, apply, patch_of

from bottleneck_operator.controller.workloads import VERSIONS
from bottleneck_operator.kube import Credentials, KubeClient, NotFound, Resource
from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.inject import CONTAINER_NAME
from bottleneck_operator.webhook.owners import OwnerCache
from bottleneck_operator.webhook.server import serve_admission
from bottleneck_operator.webhook.workloads import Profiled
from bottleneck_operator_dev.demo.cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "handlers"))
from workload_support import create, install_crd

CHART_VALUES = Path(__file__).resolve().parents[2] / "charts" / "bottleneck-operator" / "values.yaml"
TIMEOUT = float(yaml.safe_load(CHART_VALUES.read_text())["webhook"]["timeoutSeconds"])  # kube-apiserver's deadline
SLOW = 2.0  # seconds per read: the API server of the report this was built against took 1.8 s


def _pod(name: str, workload: str) -> dict[str, Any]:
    """A worker pod as the Training Operator creates it (owner reference and its label)."""
    meta = {
        "name": name,
        "namespace": "ml",
        "labels": {"training.kubeflow.org/job-name": workload, "bottleneck.dev/profiled": "true"},
        "ownerReferences": [
            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": workload, "uid": "u", "controller": True}
        ],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "w", "image": "t"}]}}


def _fetcher(cluster: LocalCluster) -> Any:
    """Reads a workload from the emulator the way the operator does (every served version of its kind)."""
    kube = KubeClient(lambda: Credentials(server=cluster.url, token="emulator"))

    async def fetch(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        for w in VERSIONS[kind]:
            try:
                return await kube.get(Resource(w.group, w.version, w.kind, w.plural), namespace, name)
            except NotFound:
                continue
        return None

    return fetch, kube


async def _admit_all(endpoint: Endpoint, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async def one(pod: dict[str, Any]) -> dict[str, Any]:
        # kube-apiserver's deadline for the webhook: a TimeoutError here fails the test.
        body = await asyncio.wait_for(endpoint.review(pod, resource=("", "v1", "pods"), kind="Pod"), TIMEOUT)
        assert body["response"]["allowed"] is True
        return apply(pod, patch_of(body))

    return list(await asyncio.gather(*(one(p) for p in pods)))


def _injected(pod: dict[str, Any]) -> bool:
    return any(c["name"] == CONTAINER_NAME for c in pod["spec"].get("initContainers", []))


@pytest.fixture
def slow_cluster(cluster: LocalCluster) -> LocalCluster:
    install_crd(cluster, "PyTorchJob")
    create(cluster, "PyTorchJob", "ml", "bert")
    assert cluster.emulator is not None
    cluster.emulator.read_latency = SLOW
    return cluster


@contextlib.asynccontextmanager
async def _serve(tls_pair: tuple[Path, Path], fetch: Any, owners: OwnerCache | None) -> AsyncIterator[Endpoint]:
    cert, key = tls_pair
    async with serve_admission(
        Settings().injection, certfile=cert, keyfile=key, levels={"ml": "privileged"}, fetch=fetch, owners=owners
    ) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            yield Endpoint(url=url, ssl=ctx, session=session)


async def test_a_workload_is_read_once_for_all_its_pods_on_a_slow_api(
    slow_cluster: LocalCluster, tls_pair: tuple[Path, Path]
) -> None:
    fetch, kube = _fetcher(slow_cluster)
    try:
        async with _serve(tls_pair, fetch, None) as endpoint:
            # 16 workers admitted at once, then 16 more: one read of the PyTorchJob serves them all.
            first = await _admit_all(endpoint, [_pod(f"bert-worker-{i}", "bert") for i in range(16)])
            later = await _admit_all(endpoint, [_pod(f"bert-worker-{i}", "bert") for i in range(16, 32)])
    finally:
        await kube.close()
    assert all(_injected(p) for p in first + later)
    assert slow_cluster.emulator is not None
    assert slow_cluster.emulator.reads.get(("pytorchjobs", "ml", "bert")) == 1


async def test_without_the_cache_every_pod_reads_its_workload(
    slow_cluster: LocalCluster, tls_pair: tuple[Path, Path]
) -> None:
    fetch, kube = _fetcher(slow_cluster)
    try:
        async with _serve(tls_pair, fetch, OwnerCache(size=0)) as endpoint:
            pods = await _admit_all(endpoint, [_pod(f"bert-worker-{i}", "bert") for i in range(8)])
    finally:
        await kube.close()
    assert all(_injected(p) for p in pods)
    assert slow_cluster.emulator is not None
    assert slow_cluster.emulator.reads.get(("pytorchjobs", "ml", "bert")) == 8


async def test_an_api_slower_than_the_budget_admits_in_time_and_serves_the_next_pods(
    slow_cluster: LocalCluster, tls_pair: tuple[Path, Path]
) -> None:
    assert slow_cluster.emulator is not None
    slow_cluster.emulator.read_latency = TIMEOUT  # each read alone would outlast the webhook's deadline
    fetch, kube = _fetcher(slow_cluster)
    try:
        async with _serve(tls_pair, fetch, None) as endpoint:
            (early,) = await _admit_all(endpoint, [_pod("bert-worker-0", "bert")])
            await asyncio.sleep(TIMEOUT)  # the read goes on after the answer, and is remembered
            (late,) = await _admit_all(endpoint, [_pod("bert-worker-1", "bert")])
    finally:
        await kube.close()
    assert not _injected(early)  # admitted unchanged, in time
    assert _injected(late)
    assert slow_cluster.emulator.reads.get(("pytorchjobs", "ml", "bert")) == 1


async def test_the_workload_webhook_marks_profiled_pod_templates(endpoint: Endpoint) -> None:
    pytorchjob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch", "image": "t"}]}}},
                "Worker": {"replicas": 3, "template": {"metadata": {"labels": {"team": "nlp"}}, "spec": {}}},
            }
        },
    }
    review = {"resource": ("kubeflow.org", "v1", "pytorchjobs"), "kind": "PyTorchJob"}
    marked = apply(pytorchjob, patch_of(await endpoint.review(pytorchjob, **review)))
    for replica in ("Master", "Worker"):
        labels = marked["spec"]["pytorchReplicaSpecs"][replica]["template"]["metadata"]["labels"]
        assert labels["bottleneck.dev/profiled"] == "true"
    assert marked["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["labels"]["team"] == "nlp"
    # Not profiled, or the collector refused: not marked, so its pods never reach the pod webhook.
    for given in ({}, {"bottleneck.dev/profile": "true", "bottleneck.dev/sidecar": "false"}):
        plain = {**pytorchjob, "metadata": {"name": "p", "namespace": "ml", "annotations": given}}
        assert patch_of(await endpoint.review(plain, **review)) == []
    # A JobSet's pod templates sit in its Jobs' templates; a TrainJob passes its switches to its JobSet.
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
        "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {}}}}}]},
    }
    js = apply(jobset, patch_of(await endpoint.review(jobset, resource=("jobset.x-k8s.io", "v1alpha2", "jobsets"))))
    assert js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"] == {
        "bottleneck.dev/profiled": "true"
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "ft", "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    tj = apply(
        trainjob, patch_of(await endpoint.review(trainjob, resource=("trainer.kubeflow.org", "v1alpha1", "trainjobs")))
    )
    assert tj["spec"]["annotations"] == {"bottleneck.dev/profile": "true"}


async def test_marking_remembers_the_workload_so_its_pods_need_no_read(tls_pair: tuple[Path, Path]) -> None:
    reads: list[tuple[str, str, str]] = []

    async def fetch(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        reads.append((namespace, kind, name))
        return None

    async with _serve(tls_pair, fetch, None) as endpoint:
        job = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "bert", "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {}}}}},
        }
        await endpoint.review(job, resource=("kubeflow.org", "v1", "pytorchjobs"), kind="PyTorchJob")
        (pod,) = await _admit_all(endpoint, [_pod("bert-worker-0", "bert")])
    assert _injected(pod)
    assert ("ml", "PyTorchJob", "bert") not in reads


async def test_the_owner_cache_is_bounded_and_expires() -> None:
    now = [0.0]
    cache = OwnerCache(size=2, ttl=10.0, clock=lambda: now[0])
    for name in ("a", "b", "c"):
        cache.remember(("ml", "PyTorchJob", name), Profiled())
    assert len(cache) == 2 and cache.cached(("ml", "PyTorchJob", "a")) == (False, None)  # the oldest went
    assert cache.cached(("ml", "PyTorchJob", "c")) == (True, Profiled())
    cache.remember(("ml", "PyTorchJob", "gone"), None)  # not profiled: remembered a tenth as long
    now[0] = 1.5
    assert cache.cached(("ml", "PyTorchJob", "gone")) == (False, None)
    assert cache.cached(("ml", "PyTorchJob", "c")) == (True, Profiled())
    now[0] = 11.0
    assert cache.cached(("ml", "PyTorchJob", "c")) == (False, None)

    async def failing(namespace: str, kind: str, name: str) -> Profiled | None:
        raise ConnectionError("the API server is away")

    found = await cache.first_profiled("ml", [("PyTorchJob", "x")], failing, budget=1.0)
    assert found is None and cache.reads == 1
    # A failed read is remembered a few seconds: the next pods do not ask again at once.
    assert await cache.first_profiled("ml", [("PyTorchJob", "x")], failing, budget=1.0) is None
    assert cache.reads == 1


async def test_a_workload_with_a_sloppy_switch_gets_a_warning_and_is_not_marked(tls_pair: tuple[Path, Path]) -> None:
    cert, key = tls_pair
    events: list[tuple[str, str, str, str]] = []

    def post(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
        events.append((body["kind"], body["metadata"]["name"], reason, message))

    annotations = {"bottleneck.dev/profile": "true", "bottleneck.dev/sidecar": "off"}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "ml", "annotations": annotations},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {}}}}},
    }
    async with serve_admission(
        Settings().injection, certfile=cert, keyfile=key, levels={"ml": "baseline"}, post=post
    ) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            endpoint = Endpoint(url=url, ssl=ctx, session=session)
            body = await endpoint.review(job, resource=("kubeflow.org", "v1", "pytorchjobs"), kind="PyTorchJob")
            fine = {**job, "metadata": {**job["metadata"], "annotations": {"bottleneck.dev/profile": "true"}}}
            review = await endpoint.review(fine, resource=("kubeflow.org", "v1", "pytorchjobs"), kind="PyTorchJob")
    # In a baseline namespace the collector goes without the host mount, and the workload says so.
    assert (
        apply(fine, patch_of(review))["metadata"]["annotations"]["bottleneck.dev/collector-no-host-cgroup"]
        == "baseline"
    )
    assert patch_of(body) == []  # the safe choice: no collector, so no pod of it reaches the pod webhook
    assert [(e[0], e[1], e[2]) for e in events] == [("PyTorchJob", "bert", "InvalidAnnotation")]
    assert 'bottleneck.dev/sidecar="off"' in events[0][3]
