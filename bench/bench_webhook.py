"""Admission webhook latency: p50/p99 over 1,000 AdmissionReviews POSTed over HTTPS to kopf's server.

The endpoint is the one ``bottleneck-operator run`` serves (kopf's WebhookServer and admission
request handling, the ``inject-sidecar`` handler), reached over TLS with a kept-alive connection as
kube-apiserver does. The client runs in the same process, so its time is included. Target: p99 <= 20 ms.

Then the pod webhook on a slow API server: the pods of PyTorchJobs the operator's watch has not
shown yet, admitted in waves of 16 as the Training Operator creates them, each workload read from
kmock's emulator slowed to 2 s per read. Without the owner cache every pod reads its workload;
with it one read serves all of a workload's pods ("cold"), and none is needed when the workload
webhook saw the workload created ("marked"). Target: p99 under the chart's 5 s timeout, both ways.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import kmock
import requests

from bottleneck_operator.controller.workloads import VERSIONS
from bottleneck_operator.kube import Credentials, KubeClient, NotFound, Resource
from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.owners import OwnerCache
from bottleneck_operator.webhook.server import serve_admission
from bottleneck_operator_dev.demo.cluster import LocalCluster

N = 1000
WARMUP = 50
API_LATENCY = 2.0  # seconds per read of one object
WORKLOADS = 4
PODS_PER_WORKLOAD = 32
WAVE = 16  # pods admitted at once


def _review(annotations: dict[str, str]) -> dict[str, Any]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train-resnet", "namespace": "ml", "annotations": annotations},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "trainer", "image": "pytorch/pytorch:2.4.0", "command": ["python", "train.py"]}
                    ],
                }
            }
        },
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": job,
            "dryRun": False,
        },
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run(cert: Path | None, key: Path | None) -> None:
    insecure = cert is None
    async with serve_admission(Settings(**{}).injection, certfile=cert, keyfile=key, insecure=insecure) as url:
        ctx = None if insecure else ssl.create_default_context(cafile=str(cert))
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            for label, annotations in (
                ("profiled Job (patched)", {"bottleneck.dev/profile": "true"}),
                ("opted-out Job (no patch)", {"bottleneck.dev/profile": "true", "bottleneck.dev/sidecar": "false"}),
            ):
                payload = json.dumps(_review(annotations)).encode()
                latencies: list[float] = []
                for i in range(WARMUP + N):
                    started = time.perf_counter()
                    async with session.post(
                        url, data=payload, ssl=ctx or False, headers={"Content-Type": "application/json"}
                    ) as r:
                        body = await r.read()
                    elapsed = time.perf_counter() - started
                    if r.status != 200 or b'"allowed": true' not in body.replace(b'"allowed":true', b'"allowed": true'):
                        raise RuntimeError(f"unexpected answer {r.status}: {body[:200]!r}")
                    if i >= WARMUP:
                        latencies.append(elapsed * 1e3)
                print(
                    f"{label}: {N} requests over {'HTTP' if insecure else 'HTTPS'}: "
                    f"p50 {statistics.median(latencies):.2f} ms, p99 {_pct(latencies, 0.99):.2f} ms, "
                    f"max {max(latencies):.2f} ms (target p99 <= 20 ms)"
                )


def _pod(workload: str, i: int) -> dict[str, Any]:
    meta = {
        "name": f"{workload}-worker-{i}",
        "namespace": "ml",
        "labels": {"training.kubeflow.org/job-name": workload, "bottleneck.dev/profiled": "true"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": workload, "uid": "u"}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "w", "image": "t"}]}}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kubeflow:training-operator"},
            "object": pod,
            "dryRun": False,
        },
    }


def _workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "w"}]}}}}},
    }


async def _slow_api_run(cluster: LocalCluster, cert: Path | None, key: Path | None, mode: str) -> None:
    kube = KubeClient(lambda: Credentials(server=cluster.url, token="emulator"))

    async def fetch(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        for w in VERSIONS[kind]:
            try:
                return await kube.get(Resource(w.group, w.version, w.kind, w.plural), namespace, name)
            except NotFound:
                continue
        return None

    assert cluster.emulator is not None
    before = dict(cluster.emulator.reads)
    owners = OwnerCache(size=0) if mode == "no cache" else OwnerCache()
    insecure = cert is None
    latencies: list[float] = []
    injected = 0
    async with serve_admission(
        Settings(**{}).injection,
        certfile=cert,
        keyfile=key,
        insecure=insecure,
        levels={"ml": "privileged"},
        fetch=fetch,
        owners=owners,
    ) as url:
        ctx = None if insecure else ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:

            async def post(payload: dict[str, Any]) -> bytes:
                started = time.perf_counter()
                async with session.post(url, json=payload, ssl=ctx or False) as r:
                    body = await r.read()
                latencies.append((time.perf_counter() - started) * 1e3)
                return body

            names = [f"{mode.replace(' ', '-')}-{k}" for k in range(WORKLOADS)]
            if mode == "marked":
                for name in names:  # the workload webhook sees each workload created
                    review = _review({})
                    review["request"].update(
                        kind={"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"},
                        resource={"group": "kubeflow.org", "version": "v1", "resource": "pytorchjobs"},
                        object=_workload(name),
                    )
                    await post(review)
                latencies.clear()
            for i in range(0, PODS_PER_WORKLOAD, WAVE):
                wave = [_pod(name, j) for name in names for j in range(i, i + WAVE)]
                bodies = await asyncio.gather(*(post(p) for p in wave))
                injected += sum(b'"patch"' in b for b in bodies)
    await kube.close()
    reads = sum(n - before.get(k, 0) for k, n in cluster.emulator.reads.items() if k[0] == "pytorchjobs")
    total = WORKLOADS * PODS_PER_WORKLOAD
    print(
        f"pod webhook, API {API_LATENCY:g} s per read, {mode}: {total} pods of {WORKLOADS} PyTorchJobs: "
        f"p50 {statistics.median(latencies):.0f} ms, p99 {_pct(latencies, 0.99):.0f} ms, max {max(latencies):.0f} ms, "
        f"{reads} workload reads, {injected}/{total} injected (timeout 5000 ms)"
    )


def _slow_api(cert: Path | None, key: Path | None) -> None:
    with LocalCluster() as cluster:
        assert cluster.emulator is not None
        cluster.emulator.resources["kubeflow.org/v1/pytorchjobs"] = kmock.ResourceInfo(
            kind="PyTorchJob",
            singular="pytorchjob",
            namespaced=True,
            verbs={"list", "watch", "get", "create", "patch", "update", "delete"},
        )
        for mode in ("no cache", "cold", "marked"):
            for k in range(WORKLOADS):
                body = _workload(f"{mode.replace(' ', '-')}-{k}")
                requests.post(
                    f"{cluster.url}/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs", json=body, timeout=10
                ).raise_for_status()
        cluster.emulator.read_latency = API_LATENCY
        for mode in ("no cache", "cold", "marked"):
            asyncio.run(_slow_api_run(cluster, cert, key, mode))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bn-bench-webhook-") as tmp:
        cert = key = None
        if shutil.which("openssl"):
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            subprocess.run(
                [
                    "openssl",
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=127.0.0.1",
                    "-addext",
                    "subjectAltName=IP:127.0.0.1",
                    "-keyout",
                    str(key),
                    "-out",
                    str(cert),
                ],
                check=True,
                capture_output=True,
            )
        else:
            print("openssl not found: measuring over plain HTTP")
        asyncio.run(_run(cert, key))
        _slow_api(cert, key)


if __name__ == "__main__":
    main()
