"""Admission webhook latency: p50/p99 over 1,000 AdmissionReviews POSTed over HTTPS to kopf's server.

The endpoint is the one ``bottleneck-operator run`` serves (kopf's WebhookServer and admission
request handling, the ``inject-sidecar`` handler), reached over TLS with a kept-alive connection as
kube-apiserver does. The client runs in the same process, so its time is included. Target: p99 <= 20 ms.
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

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.server import serve_admission

N = 1000
WARMUP = 50


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


if __name__ == "__main__":
    main()
