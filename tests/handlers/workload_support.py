"""The training operators' kinds on kmock's emulator: their vendored CRDs, objects and statuses.

A CRD is installed the way an API server learns it: the resource is served from then on, and the
CustomResourceDefinition object appears on the watch stream kopf follows. Every status written here
is first validated against the CRD's own ``.status`` schema, so the tests only write what a real API
server would accept from the training operators.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kmock
import requests
import yaml

from bottleneck_operator_dev.demo.cluster import LocalCluster

CRDS = Path(__file__).parent.parent / "data" / "crds"
# Kind (or "kind/version" for an older version) -> its CRD. MPIJob: the MPI Operator's v2beta1; "MPIJob/v1" is
# Training Operator v1's. Both are mpijobs.kubeflow.org: a cluster has one of them.
FILES = {
    "PyTorchJob": "kubeflow.org_pytorchjobs.yaml",
    "MPIJob": "mpi-operator_kubeflow.org_mpijobs.yaml",
    "MPIJob/v1": "kubeflow.org_mpijobs.yaml",
    "JobSet": "jobset.x-k8s.io_jobsets.yaml",
    "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    "RayJob": "ray.io_rayjobs.yaml",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
}
_VERBS = {"list", "watch", "get", "create", "patch", "update", "delete"}


def crd(kind: str) -> dict[str, Any]:
    """The vendored CRD of ``kind`` (a key of FILES)."""
    loaded: dict[str, Any] = yaml.safe_load((CRDS / FILES[kind]).read_text())
    return loaded


def served_version(definition: dict[str, Any]) -> dict[str, Any]:
    version: dict[str, Any] = next(v for v in definition["spec"]["versions"] if v.get("served") and v.get("storage"))
    return version


def api_version(kind: str) -> str:
    """The apiVersion the vendored CRD of ``kind`` serves."""
    definition = crd(kind)
    return f"{definition['spec']['group']}/{served_version(definition)['name']}"


def path(kind: str, namespace: str, name: str | None = None, *, status: bool = False) -> str:
    """The REST path of a workload (or its collection, or its status subresource)."""
    definition = crd(kind)
    spec = definition["spec"]
    out = f"/apis/{spec['group']}/{served_version(definition)['name']}/namespaces/{namespace}/{spec['names']['plural']}"
    if name:
        out += f"/{name}" + ("/status" if status else "")
    return out


def install_crd(cluster: LocalCluster, kind: str) -> None:
    """Serve ``kind`` from now on and create its CustomResourceDefinition object."""
    assert cluster.emulator is not None
    definition = crd(kind)
    spec = definition["spec"]
    version = served_version(definition)
    key = f"{spec['group']}/{version['name']}/{spec['names']['plural']}"
    cluster.emulator.resources[key] = kmock.ResourceInfo(
        kind=spec["names"]["kind"],
        singular=spec["names"]["singular"],
        namespaced=spec["scope"] == "Namespaced",
        verbs=_VERBS,
        subresources=set(version.get("subresources") or {}),
    )
    url = f"{cluster.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    requests.post(url, json=definition, timeout=10).raise_for_status()


def validate_status(kind: str, status: dict[str, Any]) -> dict[str, Any]:
    """``status`` unchanged, after checking it against the CRD's ``.status`` schema."""
    schema = served_version(crd(kind))["schema"]["openAPIV3Schema"]["properties"]["status"]
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(status)
    return status


def create(
    cluster: LocalCluster,
    kind: str,
    namespace: str,
    name: str,
    *,
    profile: str | None = "true",
    owners: list[dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
) -> Any:
    """A workload of ``kind`` (annotated for profiling unless ``profile`` is None); returns it."""
    definition = crd(kind)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = owners
    if profile is not None:
        meta["annotations"] = {"bottleneck.dev/profile": profile}
    body = {
        "apiVersion": f"{definition['spec']['group']}/{served_version(definition)['name']}",
        "kind": definition["spec"]["names"]["kind"],
        "metadata": meta,
        "spec": spec or {},
    }
    response = requests.post(f"{cluster.url}{path(kind, namespace)}", json=body, timeout=10)
    response.raise_for_status()
    return response.json()


def set_status(cluster: LocalCluster, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
    """Write the workload's status as its operator would (validated against the CRD first)."""
    validate_status(kind, status)
    response = requests.patch(
        f"{cluster.url}{path(kind, namespace, name, status=True)}",
        json={"status": status},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    )
    response.raise_for_status()


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, at: float, status: str = "True", reason: str = "Reason") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": ts(at)}


def kubeflow_status(start: float, *, end: float | None = None, failed: bool = False) -> dict[str, Any]:
    """A PyTorchJob's or MPIJob's status as training-operator writes it."""
    conditions = [condition("Created", start - 5), condition("Running", start, "False" if end else "True")]
    status: dict[str, Any] = {"startTime": ts(start - 5), "replicaStatuses": {"Worker": {"active": 0 if end else 2}}}
    if end is not None:
        conditions.append(condition("Failed" if failed else "Succeeded", end))
        if not failed:
            status["completionTime"] = ts(end)
    status["conditions"] = conditions
    return status


def child_jobs_status(kind: str, *, end_at: float | None = None, failed: bool = False) -> dict[str, Any]:
    """A JobSet's or TrainJob's status: child Jobs active, or a terminal condition."""
    children = "replicatedJobsStatus" if kind == "JobSet" else "jobsStatus"
    counts = {"name": "node", "active": 0 if end_at else 2, "ready": 0 if end_at else 2, "failed": 0}
    counts.update({"succeeded": 0 if failed or not end_at else 2, "suspended": 0})
    status: dict[str, Any] = {children: [counts]}
    if end_at is not None:
        done = "Completed" if kind == "JobSet" else "Complete"
        status["conditions"] = [condition("Failed" if failed else done, end_at)]
        if kind == "JobSet":
            status["terminalState"] = "Failed" if failed else "Completed"
    return status
