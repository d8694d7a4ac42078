"""AdmissionReviews POSTed over HTTPS to the endpoint kopf serves -> the JSON patch for each case."""

from __future__ import annotations

import copy
import json
from typing import Any

import kubernetes_validate
import pytest
from _webhook_support import admission_review, apply, make_job, patch_of

from bottleneck_operator.webhook.inject import CGROUP_MOUNT, CGROUP_VOLUME, CONTAINER_NAME

PROFILED = {"bottleneck.dev/profile": "true"}


def _collector(job: dict[str, Any]) -> dict[str, Any]:
    found = [c for c in job["spec"]["template"]["spec"].get("initContainers", []) if c["name"] == CONTAINER_NAME]
    assert len(found) == 1
    collector: dict[str, Any] = found[0]
    return collector


async def test_annotated_job_gets_the_collector_as_a_native_sidecar(endpoint: Any) -> None:
    job = make_job(PROFILED)
    review = admission_review(job)
    status, body = await endpoint.post_raw(json.dumps(review).encode())
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    response = body["response"]
    assert response["uid"] == review["request"]["uid"]
    assert response["allowed"] is True

    mutated = apply(job, patch_of(body))
    pod = mutated["spec"]["template"]["spec"]
    sidecar = _collector(mutated)
    assert sidecar["restartPolicy"] == "Always"  # native sidecar: the Job completes when the trainer exits
    assert sidecar["args"][:3] == ["sidecar", "--port", "9105"]
    assert sidecar["ports"] == [{"name": "bn-metrics", "containerPort": 9105, "protocol": "TCP"}]
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in sidecar["env"] if "valueFrom" in e}
    assert env == {
        "POD_NAME": "metadata.name",
        "POD_NAMESPACE": "metadata.namespace",
        "NODE_NAME": "spec.nodeName",
        "POD_UID": "metadata.uid",
    }
    sc = sidecar["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 65532
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert sidecar["resources"] == {
        "requests": {"cpu": "10m", "memory": "32Mi"},
        "limits": {"cpu": "50m", "memory": "64Mi"},
    }
    # The pod's cgroup through the node's cgroup file system, read-only; processes through a shared PID namespace.
    assert {"name": CGROUP_VOLUME, "mountPath": CGROUP_MOUNT, "readOnly": True} in sidecar["volumeMounts"]
    assert {"name": CGROUP_VOLUME, "hostPath": {"path": "/sys/fs/cgroup", "type": "Directory"}} in pod["volumes"]
    assert "--cgroup-root" in sidecar["args"]
    assert pod["shareProcessNamespace"] is True
    # The trainer is untouched.
    assert pod["containers"] == job["spec"]["template"]["spec"]["containers"]
    assert mutated["metadata"] == job["metadata"]


@pytest.mark.parametrize("version", ["1.29", kubernetes_validate.latest_version()])
async def test_mutated_job_is_valid_for_kubernetes(endpoint: Any, version: str) -> None:
    job = make_job(PROFILED)
    mutated = apply(job, patch_of(await endpoint.review(job)))
    kubernetes_validate.validate(mutated, version, strict=True)  # raises on any unknown or mistyped field


@pytest.mark.parametrize(
    "annotations",
    [
        None,
        {},
        {"bottleneck.dev/profile": "false"},
        {"bottleneck.dev/profile": "yes"},
        {"bottleneck.dev/profile": "true", "bottleneck.dev/sidecar": "false"},
    ],
    ids=["no-annotations", "empty", "profile-false", "profile-not-true", "opted-out"],
)
async def test_jobs_not_asking_for_the_collector_pass_untouched(endpoint: Any, annotations: Any) -> None:
    body = await endpoint.review(make_job(annotations))
    assert body["response"]["allowed"] is True
    assert patch_of(body) == []


async def test_injection_is_idempotent(endpoint: Any) -> None:
    job = make_job(PROFILED)
    once = apply(job, patch_of(await endpoint.review(job)))
    again = await endpoint.review(once)
    assert again["response"]["allowed"] is True
    assert patch_of(again) == []


async def test_existing_init_containers_and_volumes_are_kept(endpoint: Any) -> None:
    job = make_job(PROFILED)
    pod = job["spec"]["template"]["spec"]
    pod["initContainers"] = [{"name": "fetch-data", "image": "busybox", "command": ["true"]}]
    pod["volumes"] = [{"name": "data", "emptyDir": {}}]
    mutated = apply(job, patch_of(await endpoint.review(job)))
    mpod = mutated["spec"]["template"]["spec"]
    assert [c["name"] for c in mpod["initContainers"]] == [CONTAINER_NAME, "fetch-data"]
    assert [v["name"] for v in mpod["volumes"]] == ["data", CGROUP_VOLUME]
    kubernetes_validate.validate(mutated, "1.29", strict=True)


async def test_not_a_job_resource_is_not_mutated(endpoint: Any) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": PROFILED},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    # A pod is only injected as part of a profiled training workload, never by its own annotation.
    body = await endpoint.review(pod, resource=("", "v1", "pods"), kind="Pod")
    assert body["response"]["allowed"] is True and "patch" not in body["response"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": PROFILED}}
    status, answer = await endpoint.post_raw(
        json.dumps(admission_review(cm, resource=("", "v1", "configmaps"), kind="ConfigMap")).encode()
    )
    # kopf answers 404 for a resource it has no handler for; with failurePolicy: Ignore it is admitted as is.
    assert status == 404
    assert "patch" not in str(answer)


async def test_object_that_is_not_a_job_on_the_jobs_endpoint_passes(endpoint: Any) -> None:
    cronjob = make_job(PROFILED)
    cronjob["kind"] = "CronJob"
    body = await endpoint.review(cronjob)
    assert body["response"]["allowed"] is True
    assert patch_of(body) == []


@pytest.mark.parametrize(
    "pod_spec",
    [
        {"containers": "trainer"},
        {"containers": [{"name": "t", "image": "x"}], "initContainers": {"name": "x"}},
        {"containers": [{"name": "t", "image": "x"}], "volumes": "data"},
        {"containers": ["not-a-mapping"]},
    ],
    ids=["containers-not-a-list", "init-not-a-list", "volumes-not-a-list", "container-not-a-mapping"],
)
async def test_malformed_job_is_allowed_unchanged(endpoint: Any, pod_spec: dict[str, Any]) -> None:
    body = await endpoint.review(make_job(PROFILED, pod_spec=pod_spec))
    assert body["response"]["allowed"] is True
    assert patch_of(body) == []


async def test_malformed_template_shapes_are_allowed_unchanged(endpoint: Any) -> None:
    job = make_job(PROFILED)
    job["spec"]["template"] = ["not", "a", "template"]
    body = await endpoint.review(job)
    assert body["response"]["allowed"] is True
    assert patch_of(body) == []


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b"[]", b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}'],
    ids=["not-json", "not-an-object", "no-request"],
)
async def test_malformed_review_gets_an_error_status_and_no_patch(endpoint: Any, payload: bytes) -> None:
    status, body = await endpoint.post_raw(payload)
    assert status >= 400
    assert "patch" not in str(body)


async def test_review_without_user_info_is_refused_with_bad_request(endpoint: Any) -> None:
    review = admission_review(make_job(PROFILED))
    del review["request"]["userInfo"]
    status, _ = await endpoint.post_raw(json.dumps(review).encode())
    assert status == 400


async def test_update_operations_are_not_mutated(endpoint: Any) -> None:
    job = make_job(PROFILED)
    review = admission_review(job, operation="UPDATE")
    review["request"]["oldObject"] = copy.deepcopy(job)
    status, body = await endpoint.post_raw(json.dumps(review).encode())
    assert status == 200
    assert patch_of(body) == []
