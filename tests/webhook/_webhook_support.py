"""AdmissionReview requests as kube-apiserver sends them, their patches decoded, and a running operator.

``running_operator`` and ``wait_for_review`` are the one start-up harness of the tests that run kopf
with the webhook (test_webhook_operator.py, test_webhook_workload_pods.py).
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import jsonpatch
import kopf
from kopf.testing import KopfRunner


def make_job(
    annotations: dict[str, str] | None = None,
    *,
    name: str = "train-resnet",
    namespace: str = "ml",
    pod_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Job as the API server sends it in an admission request (defaults not yet applied)."""
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": pod_spec
                or {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                            "command": ["python", "train.py"],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                }
            },
        },
    }
    if annotations is not None:
        job["metadata"]["annotations"] = annotations
    return job


def admission_review(
    obj: Any,
    *,
    resource: tuple[str, str, str] = ("batch", "v1", "jobs"),
    kind: str = "Job",
    operation: str = "CREATE",
    namespace: str = "ml",
) -> dict[str, Any]:
    """An admission.k8s.io/v1 AdmissionReview request as kube-apiserver sends it."""
    group, version, plural = resource
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": plural},
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def patch_of(review_response: dict[str, Any]) -> list[dict[str, Any]]:
    """The decoded JSON patch of a response ([] when there is none)."""
    response = review_response["response"]
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops


def apply(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.apply_patch(obj, ops)
    return result


@dataclass
class Endpoint:
    url: str
    ssl: ssl.SSLContext
    session: aiohttp.ClientSession

    async def post_raw(self, data: bytes) -> tuple[int, Any]:
        async with self.session.post(
            self.url, data=data, ssl=self.ssl, headers={"Content-Type": "application/json"}
        ) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except json.JSONDecodeError:
                return resp.status, text

    async def review(self, obj: Any, **request: Any) -> dict[str, Any]:
        status, body = await self.post_raw(json.dumps(admission_review(obj, **request)).encode())
        assert status == 200, body
        assert isinstance(body, dict)
        return body


def post_review(url: str, payload: dict[str, Any], ctx: ssl.SSLContext) -> tuple[int, Any]:
    """POST one AdmissionReview synchronously: (HTTP status, JSON body); (0, why) while nothing listens."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def wait_for_review(
    url: str,
    payload: dict[str, Any],
    ctx: ssl.SSLContext,
    *,
    until: Callable[[int, Any], bool],
    what: str,
    timeout: float = 45.0,
) -> tuple[int, Any]:
    """POST the review again until ``until(status, body)`` holds; fails with ``what`` after ``timeout`` s.

    A starting operator serves its webhook only once kopf has discovered the resources it watches,
    and answers for a workload only once its watch has shown it.
    """
    deadline = time.monotonic() + timeout
    while True:
        status, body = post_review(url, payload, ctx)
        if until(status, body):
            return status, body
        assert time.monotonic() < deadline, f"{what}: {status} {body}"
        time.sleep(0.2)


@contextmanager
def running_operator(registry: kopf.OperatorRegistry) -> Iterator[KopfRunner]:
    """kopf run, standalone over all namespaces, with ``registry``; its own errors fail the test."""
    with KopfRunner(
        ["run", "--standalone", "--all-namespaces"], registry=registry, settings=kopf.OperatorSettings(), timeout=60
    ) as runner:
        yield runner
    assert runner.exception is None, runner.output
