"""Where each workload kind keeps its pod templates, and the volume claims those templates mount.

Pure functions over the workload as the API serves it (plain dicts). Two readers: the workload
webhook labels the templates (``webhook.templates``), and the cluster summary reads the claims to
learn a Job's storage classes (:mod:`.places`).

Where each kind keeps its pod templates:

- ``Job``: ``spec.template``;
- ``PyTorchJob``: ``spec.pytorchReplicaSpecs.<type>.template``;
- ``MPIJob``: ``spec.mpiReplicaSpecs.<type>.template`` (both the MPI Operator's and Training
  Operator v1's);
- ``JobSet``: ``spec.replicatedJobs[].template.spec.template`` (a Job template's pod template);
- ``RayJob``: ``spec.rayClusterSpec.headGroupSpec.template`` and each
  ``spec.rayClusterSpec.workerGroupSpecs[].template`` (KubeRay keeps the templates' labels on the
  RayCluster's pods);
- ``LeaderWorkerSet``: ``spec.leaderWorkerTemplate.leaderTemplate`` and ``.workerTemplate``;
- ``TrainJob``: none: its pods come from a TrainingRuntime. Only its
  ``spec.podTemplateOverrides[].spec`` say what it adds to them (volumes among it), so its claims
  are read there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Templates = Callable[[dict[str, Any]], Iterator[Any]]


def _replica_specs(field: str) -> Templates:
    def templates(spec: dict[str, Any]) -> Iterator[Any]:
        replicas = spec.get(field)
        for replica in replicas.values() if isinstance(replicas, dict) else ():
            yield replica.get("template") if isinstance(replica, dict) else None

    return templates


def _jobset(spec: dict[str, Any]) -> Iterator[Any]:
    jobs = spec.get("replicatedJobs")
    for job in jobs if isinstance(jobs, list) else ():
        template = job.get("template") if isinstance(job, dict) else None
        job_spec = template.get("spec") if isinstance(template, dict) else None
        yield job_spec.get("template") if isinstance(job_spec, dict) else None


def _rayjob(spec: dict[str, Any]) -> Iterator[Any]:
    cluster = spec.get("rayClusterSpec")
    if not isinstance(cluster, dict):
        return
    head = cluster.get("headGroupSpec")
    yield head.get("template") if isinstance(head, dict) else None
    workers = cluster.get("workerGroupSpecs")
    for group in workers if isinstance(workers, list) else ():
        yield group.get("template") if isinstance(group, dict) else None


def _leaderworkerset(spec: dict[str, Any]) -> Iterator[Any]:
    templates = spec.get("leaderWorkerTemplate")
    if isinstance(templates, dict):
        yield templates.get("leaderTemplate")
        yield templates.get("workerTemplate")


# kind -> the pod templates of its spec. Kinds added here are marked by the workload webhook once
# the chart's MutatingWebhookConfiguration sends them to it.
POD_TEMPLATES: dict[str, Templates] = {
    "PyTorchJob": _replica_specs("pytorchReplicaSpecs"),
    "MPIJob": _replica_specs("mpiReplicaSpecs"),
    "JobSet": _jobset,
    "RayJob": _rayjob,
    "LeaderWorkerSet": _leaderworkerset,
}


@dataclass(frozen=True)
class VolumeClaims:
    """The storage a workload's pods mount, as its templates name it.

    Attributes:
        claims: names of the PersistentVolumeClaims mounted (``persistentVolumeClaim.claimName``), in
            the workload's namespace; their storage class is read from each claim.
        classes: storage classes named directly by generic ephemeral volumes' claim templates.
    """

    claims: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.claims or self.classes)


NO_CLAIMS = VolumeClaims()


def _pod_specs(kind: str, spec: dict[str, Any]) -> Iterator[Any]:
    if kind == "Job":
        template = spec.get("template")
        yield template.get("spec") if isinstance(template, dict) else None
    elif kind == "TrainJob":
        overrides = spec.get("podTemplateOverrides")
        for override in overrides if isinstance(overrides, list) else ():
            yield override.get("spec") if isinstance(override, dict) else None
    else:
        for template in POD_TEMPLATES.get(kind, _no_templates)(spec):
            yield template.get("spec") if isinstance(template, dict) else None


def _no_templates(spec: dict[str, Any]) -> Iterator[Any]:
    return iter(())


def volume_claims(kind: str, body: Mapping[str, Any]) -> VolumeClaims:
    """Every claim the workload's pod templates mount, and the classes of their ephemeral claims.

    A malformed part of the spec is skipped, never an error: the claims feed a statistic, and a
    workload the API server admitted is the training operator's to judge.
    """
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return NO_CLAIMS
    claims: set[str] = set()
    classes: set[str] = set()
    for pod_spec in _pod_specs(kind, spec):
        volumes = pod_spec.get("volumes") if isinstance(pod_spec, dict) else None
        for volume in volumes if isinstance(volumes, list) else ():
            if not isinstance(volume, dict):
                continue
            claim = volume.get("persistentVolumeClaim")
            if isinstance(claim, dict) and isinstance(claim.get("claimName"), str) and claim["claimName"]:
                claims.add(claim["claimName"])
            storage_class = _ephemeral_class(volume.get("ephemeral"))
            if storage_class:
                classes.add(storage_class)
    return VolumeClaims(frozenset(claims), frozenset(classes)) if claims or classes else NO_CLAIMS


def _ephemeral_class(ephemeral: Any) -> str | None:
    # A template without a class gets the cluster's default one, which only a StorageClass read
    # would tell: left out rather than guessed.
    template = ephemeral.get("volumeClaimTemplate") if isinstance(ephemeral, dict) else None
    claim_spec = template.get("spec") if isinstance(template, dict) else None
    value = claim_spec.get("storageClassName") if isinstance(claim_spec, dict) else None
    return value if isinstance(value, str) and value else None
