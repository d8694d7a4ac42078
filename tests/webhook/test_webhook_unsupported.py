"""An annotated object of a kind the operator does not profile gets a Warning Event, through the webhook.

Over kopf's HTTPS server as the operator serves it, with AdmissionReviews as kube-apiserver sends
them; the chart routes exactly :data:`unsupported.WATCHED` there (checked in tests/chart).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from _webhook_support import Endpoint, admission_review, patch_of

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook import unsupported
from bottleneck_operator.webhook.server import serve_admission

Posted = list[tuple[dict[str, Any], str, str, str]]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    unsupported._posted.clear()


@pytest.fixture
async def notices(tls_pair: tuple[Path, Path]) -> AsyncIterator[tuple[Endpoint, Posted]]:
    cert, key = tls_pair
    posted: Posted = []

    def post(target: dict[str, Any], type_: str, reason: str, message: str) -> None:
        posted.append((target, type_, reason, message))

    async with serve_admission(Settings().injection, certfile=cert, keyfile=key, post=post) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            yield Endpoint(url=url.rsplit("/", 1)[0] + "/" + unsupported.HANDLER_ID, ssl=ctx, session=session), posted


def _object(kind: str, api_version: str, name: str, annotations: dict[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": {}}


async def test_an_annotated_deployment_gets_one_warning(notices: tuple[Endpoint, Posted]) -> None:
    endpoint, posted = notices
    deployment = _object("Deployment", "apps/v1", "trainer", {"bottleneck.dev/profile": "true"})
    body = await endpoint.review(deployment, resource=("apps", "v1", "deployments"), kind="Deployment")
    assert body["response"]["allowed"] is True and patch_of(body) == []
    ((target, type_, reason, message),) = posted
    assert (type_, reason) == ("Warning", "UnsupportedWorkload")
    assert target == {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer", "namespace": "ml"}}
    assert "does not profile" in message
    for kind in ("Job", "PyTorchJob", "MPIJob", "JobSet", "TrainJob", "RayJob", "LeaderWorkerSet"):
        assert kind in message
    # An update of the same Deployment says nothing new.
    await endpoint.review(deployment, resource=("apps", "v1", "deployments"), kind="Deployment", operation="UPDATE")
    assert len(posted) == 1


async def test_a_cronjob_is_told_where_the_annotation_goes(notices: tuple[Endpoint, Posted]) -> None:
    endpoint, posted = notices
    cron = _object("CronJob", "batch/v1", "nightly", {"bottleneck.dev/profile": "true"})
    await endpoint.review(cron, resource=("batch", "v1", "cronjobs"), kind="CronJob")
    assert "spec.jobTemplate.metadata" in posted[0][3]


async def test_unannotated_objects_and_dry_runs_post_nothing(notices: tuple[Endpoint, Posted]) -> None:
    endpoint, posted = notices
    plain = _object("Job", "batch.volcano.sh/v1alpha1", "vc", {"team": "vision"})
    body = await endpoint.review(plain, resource=("batch.volcano.sh", "v1alpha1", "jobs"), kind="Job")
    assert body["response"]["allowed"] is True
    annotated = _object("Job", "batch.volcano.sh/v1alpha1", "vc", {"bottleneck.dev/profile": "true"})
    review = {"resource": ("batch.volcano.sh", "v1alpha1", "jobs"), "kind": "Job"}
    dry = admission_review(annotated, **review)  # type: ignore[arg-type]
    dry["request"]["dryRun"] = True
    status, answer = await endpoint.post_raw(json.dumps(dry).encode())
    assert status == 200 and answer["response"]["allowed"] is True
    assert posted == []
    await endpoint.review(annotated, **review)  # type: ignore[arg-type]
    assert [p[0]["apiVersion"] for p in posted] == ["batch.volcano.sh/v1alpha1"]
