"""The pods of the training operators' workloads: injected when their workload is profiled.

First over the endpoint alone, with the workload cache given as the operator would answer; then
inside a running operator, where the cache is fed by kopf's watch of a PyTorchJob created on the
emulated API server from its vendored CRD.
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import pytest
from _webhook_support import (
    Endpoint,
    admission_review,
    apply,
    patch_of,
    post_review,
    running_operator,
    wait_for_review,
)

from bottleneck_operator.handlers import register_handlers
from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook import handlers
from bottleneck_operator.webhook.inject import CGROUP_VOLUME, CONTAINER_NAME
from bottleneck_operator.webhook.server import configure_admission, serve_admission
from bottleneck_operator.webhook.workloads import Profiled, candidates
from bottleneck_operator_dev.demo import cluster as cluster_mod
from bottleneck_operator_dev.simulation.localprom import free_port

sys.path.insert(0, str(Path(__file__).parent.parent / "handlers"))
from workload_support import create, install_crd

PROFILED_WORKLOADS = {
    ("ml", "PyTorchJob", "bert"): Profiled(),
    ("ml", "TrainJob", "ft"): Profiled(host_cgroup=False),
    ("ml", "JobSet", "quiet"): Profiled(collector=False),
}


def _pod(name: str, *, owner: tuple[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "kubeflow.org/v1", "kind": owner[0], "name": owner[1], "uid": "u", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"restartPolicy": "Never", "containers": [{"name": "pytorch", "image": "trainer"}]},
    }


@pytest.fixture
async def endpoint(tls_pair: tuple[Path, Path]) -> AsyncIterator[Endpoint]:
    cert, key = tls_pair

    def lookup(namespace: str, kind: str, name: str) -> Profiled | None:
        return PROFILED_WORKLOADS.get((namespace, kind, name))

    async with serve_admission(
        Settings().injection, certfile=cert, keyfile=key, levels={"ml": "privileged"}, workloads=lookup
    ) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            yield Endpoint(url=url, ssl=ctx, session=session)


async def _admit(endpoint: Endpoint, pod: dict[str, Any]) -> dict[str, Any]:
    body = await endpoint.review(pod, resource=("", "v1", "pods"), kind="Pod")
    assert body["response"]["allowed"] is True
    return apply(pod, patch_of(body))


def _collectors(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in pod["spec"].get("initContainers", []) if c["name"] == CONTAINER_NAME]


async def test_pods_of_profiled_workloads_get_the_collector(endpoint: Endpoint) -> None:
    master = await _admit(endpoint, _pod("bert-master-0", owner=("PyTorchJob", "bert")))
    assert len(_collectors(master)) == 1
    assert [v["name"] for v in master["spec"]["volumes"]] == [CGROUP_VOLUME]
    assert master["metadata"]["labels"]["bottleneck.dev/collector"] == "true"
    # The training operator's label alone is enough (no owner reference in the admitted pod).
    worker = await _admit(endpoint, _pod("bert-worker-0", labels={"training.kubeflow.org/job-name": "bert"}))
    assert len(_collectors(worker)) == 1
    # A TrainJob's pod, through its JobSet's label; the TrainJob turned the host mount off.
    ft = {"jobset.sigs.k8s.io/jobset-name": "ft", "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    node = await _admit(endpoint, _pod("ft-node-0-0-abcde", labels=ft))
    assert len(_collectors(node)) == 1 and "volumes" not in node["spec"]


async def test_other_pods_pass_untouched(endpoint: Endpoint) -> None:
    for pod in (
        _pod("lonely"),
        _pod("other-master-0", owner=("PyTorchJob", "other")),  # not profiled
        _pod("quiet-node-0-0-x", labels={"jobset.sigs.k8s.io/jobset-name": "quiet"}),  # collector opted out
        _pod("bert-x", owner=("Deployment", "bert")),  # same name, another kind
    ):
        body = await endpoint.review(pod, resource=("", "v1", "pods"), kind="Pod")
        assert body["response"]["allowed"] is True and patch_of(body) == [], pod["metadata"]["name"]


async def test_a_workload_the_cache_does_not_know_yet_is_read_once(tls_pair: tuple[Path, Path]) -> None:
    cert, key = tls_pair
    reads: list[tuple[str, str, str]] = []
    objects = {
        ("ml", "PyTorchJob", "cold"): {"metadata": {"name": "cold", "annotations": {"bottleneck.dev/profile": "true"}}},
        ("ml", "PyTorchJob", "plain"): {"metadata": {"name": "plain"}},
    }

    async def fetch(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        reads.append((namespace, kind, name))
        if name == "broken":
            raise ConnectionError("the API server is away")
        return objects.get((namespace, kind, name))

    async with serve_admission(
        Settings().injection, certfile=cert, keyfile=key, levels={"ml": "privileged"}, fetch=fetch
    ) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            endpoint = Endpoint(url=url, ssl=ctx, session=session)
            cold = await _admit(endpoint, _pod("cold-worker-0", owner=("PyTorchJob", "cold")))
            assert len(_collectors(cold)) == 1
            for name in ("plain", "broken"):
                pod = _pod(f"{name}-worker-0", owner=("PyTorchJob", name))
                body = await endpoint.review(pod, resource=("", "v1", "pods"), kind="Pod")
                assert body["response"]["allowed"] is True and patch_of(body) == [], name
            # A pod that names no training workload costs no read at all.
            await endpoint.review(_pod("lonely"), resource=("", "v1", "pods"), kind="Pod")
    assert reads[0] == ("ml", "PyTorchJob", "cold")
    assert all(name != "lonely" for _, _, name in reads)


def test_candidates_come_from_owners_then_labels() -> None:
    pod = _pod("p", owner=("MPIJob", "hpl"), labels={"jobset.sigs.k8s.io/jobset-name": "js"})
    assert candidates(pod) == [("MPIJob", "hpl"), ("JobSet", "js"), ("TrainJob", "js")]
    assert candidates({"metadata": "garbage"}) == []


class _Idle:
    queries_issued = 0

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> list[Any]:
        return []


def _injected(status: int, body: Any) -> bool:
    return status == 200 and "patch" in body["response"]


def test_running_operator_injects_the_pods_of_a_profiled_pytorchjob(
    cluster: Any, tls_pair: tuple[Path, Path], cert_dir: Path
) -> None:
    cert, _ = tls_pair
    port = free_port()
    settings = Settings(
        prometheus_url="http://127.0.0.1:9",
        metrics_port=0,
        liveness_endpoint="",
        webhook_port=port,
        webhook_cert_dir=cert_dir,
        pod_security_default_level="privileged",  # the emulator's namespaces carry no labels
    )
    install_crd(cluster, "PyTorchJob")
    create(cluster, "PyTorchJob", "ml", "bert")  # before the start: namespace "ml" is listed, unlabelled
    registry = kopf.OperatorRegistry()
    register_handlers(
        registry,
        settings,
        analyzer_factory=_Idle,
        configure_kopf=lambda ks: configure_admission(ks, settings.injection),
    )
    handlers.register(registry)
    ctx = ssl.create_default_context(cafile=str(cert))
    url = f"https://127.0.0.1:{port}/{handlers.POD_HANDLER_ID}"
    review = admission_review(
        _pod("bert-worker-1", owner=("PyTorchJob", "bert")), resource=("", "v1", "pods"), kind="Pod"
    )
    stranger = admission_review(_pod("x-worker-0", owner=("PyTorchJob", "x")), resource=("", "v1", "pods"), kind="Pod")
    with running_operator(registry):
        # Served, and the PyTorchJob is in the operator's cache.
        _, body = wait_for_review(url, review, ctx, until=_injected, what="the pod was never injected")
        other_status, other = post_review(url, stranger, ctx)
        # kopf serves the workload webhook on the path the chart gives it.
        marking = admission_review(
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": "gpt", "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
                "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {}}}}},
            },
            resource=("kubeflow.org", "v1", "pytorchjobs"),
            kind="PyTorchJob",
        )
        mark_url = f"https://127.0.0.1:{port}/{handlers.WORKLOAD_HANDLER_ID}"
        _, marked = wait_for_review(mark_url, marking, ctx, until=_injected, what="the PyTorchJob was never marked")
        # A namespace the operator's namespace watch has not shown: no host mount, and an Event says so.
        create(cluster, "PyTorchJob", "fresh", "late")
        late = _pod("late-worker-0", owner=("PyTorchJob", "late"))
        late["metadata"]["namespace"] = "fresh"
        late_review = admission_review(late, resource=("", "v1", "pods"), kind="Pod", namespace="fresh")
        _, late_body = wait_for_review(url, late_review, ctx, until=_injected, what="the late pod was never injected")
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while not events and time.monotonic() < deadline:
            events = [
                e
                for e in cluster.list(cluster_mod.EVENTS, "fresh")
                if e.get("reason") == "CollectorRestricted" and e["involvedObject"]["kind"] == "PyTorchJob"
            ]
            time.sleep(0.2)
    late_pod = apply(late, json.loads(base64.b64decode(late_body["response"]["patch"])))
    assert len(_collectors(late_pod)) == 1 and "volumes" not in late_pod["spec"]
    assert events and events[0]["involvedObject"]["name"] == "late" and "not known yet" in events[0]["message"]
    pod = apply(review["request"]["object"], json.loads(base64.b64decode(body["response"]["patch"])))
    assert len(_collectors(pod)) == 1
    assert [v["name"] for v in pod["spec"]["volumes"]] == [CGROUP_VOLUME]  # "ml" is unlabelled: the default
    assert other_status == 200 and "patch" not in other["response"]
    gpt = apply(marking["request"]["object"], json.loads(base64.b64decode(marked["response"]["patch"])))
    assert gpt["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["labels"] == {
        "bottleneck.dev/profiled": "true"
    }
