"""The training workloads the operator profiles: batch/v1 Jobs and the training operators' kinds.

Each kind says where its phase is read (its own ``.status``: every operator writes different
conditions) and how its pods are found:

- ``Job``: pods owned by the Job (``kube_pod_info{created_by_kind="Job"}``);
- ``PyTorchJob`` (Kubeflow Training Operator, ``kubeflow.org/v1``): pods owned by the workload
  itself, named ``<name>-<replica type>-<index>``;
- ``MPIJob``: the Kubeflow MPI Operator's ``kubeflow.org/v2beta1`` (workers owned by the MPIJob,
  the launcher's pod by a ``<name>-launcher`` Job that ``kube_job_owner`` links to it), or
  Training Operator v1's ``kubeflow.org/v1`` (every pod owned by the MPIJob). A cluster serves one
  of the two (both are the CRD ``mpijobs.kubeflow.org``); the operator watches both versions;
- ``JobSet`` (``jobset.x-k8s.io/v1alpha2``): pods owned by child Jobs named
  ``<name>-<replicated job>-<index>``, which kube-state-metrics links back through
  ``kube_job_owner{owner_kind="JobSet"}``;
- ``TrainJob`` (Kubeflow Trainer v2, ``trainer.kubeflow.org/v1alpha1``): runs as a JobSet of the
  same name, so its pods are found as that JobSet's;
- ``RayJob`` (KubeRay, ``ray.io/v1``): its pods belong to a RayCluster named ``<name>-<5 chars>``
  (KubeRay before 1.1: ``<name>-raycluster-<5 chars>``), plus the submitter Job ``<name>``;
- ``LeaderWorkerSet`` (``leaderworkerset.x-k8s.io/v1``): its pods belong to StatefulSets named
  ``<name>`` (the leaders, ``<name>-<group>``) and ``<name>-<group>`` (the workers,
  ``<name>-<group>-<worker>``); it serves until deleted, so it stays Running.

Every kind reads a suspension (``spec.suspend``, Kubeflow's ``runPolicy.suspend``, the
``Suspended`` condition, Kueue's preemption, which suspends the workload) as the phase
``Suspended``: no analysis while it lasts, and the analysis window starts again when it resumes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bottleneck_operator.contract.times import parse_rfc3339_or_none

Phase = tuple[str, float | None, float | None]  # (phase, start, end) in unix seconds


# An RFC 3339 time from the API as unix seconds, None when absent or unreadable.
parse_time = parse_rfc3339_or_none


def _true(status: Mapping[str, Any], *types: str) -> Mapping[str, Any] | None:
    """The first condition of one of ``types`` whose status is "True"."""
    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") in types and str(cond.get("status")) == "True":
            return cond
    return None


def _cond_time(cond: Mapping[str, Any]) -> float | None:
    return (
        parse_time(cond.get("lastTransitionTime"))
        or parse_time(cond.get("lastUpdateTime"))
        or parse_time(cond.get("lastProbeTime"))
    )


def job_phase(status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None = None) -> Phase:
    """A batch/v1 Job: ``Complete``/``Failed`` conditions, ``startTime`` and ``completionTime``.

    A Failed Job has no completionTime, so the condition's time is the end.
    """
    status = status or {}
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    ended = _true(status, "Complete", "Failed")
    if ended is not None:
        return ("Completed" if ended["type"] == "Complete" else "Failed"), start, end or _cond_time(ended)
    if end is not None:
        return "Completed", start, end
    if _true(status, "Suspended") is not None:
        # Kubernetes keeps the old startTime while a Job is suspended and resets it on resume.
        return "Suspended", None, None
    return ("Running" if start is not None else "Pending"), start, None


def kubeflow_phase(status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None = None) -> Phase:
    """PyTorchJob and MPIJob (training-operator's JobStatus): ``Succeeded``/``Failed`` conditions.

    ``startTime`` is when the training operator acknowledged the Job; a ``Suspended`` one waits.
    """
    status = status or {}
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    ended = _true(status, "Succeeded", "Failed")
    if ended is not None:
        return ("Completed" if ended["type"] == "Succeeded" else "Failed"), start, end or _cond_time(ended)
    if _true(status, "Suspended") is not None:
        return "Suspended", None, None
    running = _true(status, "Running", "Restarting")
    if running is not None:
        return "Running", start or _cond_time(running), None
    return ("Running" if start is not None else "Pending"), start, None


def _child_jobs_phase(
    status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None, *, done: str, children: str
) -> Phase:
    """JobSet and TrainJob: a terminal condition, else running once a child Job is active.

    Neither writes a start time: the first condition's time (JobSet: ``StartupPolicyCompleted`` or
    none; TrainJob: ``Created``) is used, else the object's creation time.
    """
    status = status or {}
    created = parse_time((meta or {}).get("creationTimestamp"))
    first = min(
        (t for c in status.get("conditions") or () if isinstance(c, Mapping) and (t := _cond_time(c))), default=None
    )
    start = first if first is not None and (created is None or first >= created) else created
    ended = _true(status, done, "Failed")
    if ended is not None:
        return ("Failed" if ended["type"] == "Failed" else "Completed"), start, _cond_time(ended)
    terminal = str(status.get("terminalState") or "")
    if terminal in ("Completed", "Complete", "Failed"):
        return ("Failed" if terminal == "Failed" else "Completed"), start, None
    if _true(status, "Suspended") is not None:
        return "Suspended", None, None
    active = any(
        isinstance(s, Mapping) and (int(s.get("active") or 0) > 0 or int(s.get("ready") or 0) > 0)
        for s in status.get(children) or ()
    )
    return ("Running", start, None) if active else ("Pending", None, None)


def jobset_phase(status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None = None) -> Phase:
    """JobSet: ``Completed``/``Failed`` conditions (or ``terminalState``), ``replicatedJobsStatus``."""
    return _child_jobs_phase(status, meta, done="Completed", children="replicatedJobsStatus")


def trainjob_phase(status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None = None) -> Phase:
    """TrainJob: ``Complete``/``Failed`` conditions, ``jobsStatus`` of its JobSet's replicated Jobs."""
    return _child_jobs_phase(status, meta, done="Complete", children="jobsStatus")


def rayjob_phase(status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None = None) -> Phase:
    """RayJob: ``jobDeploymentStatus`` (KubeRay's lifecycle) and ``jobStatus`` (Ray's own), ``startTime``/``endTime``.

    ``Complete`` ends with Ray's verdict (SUCCEEDED, or FAILED/STOPPED); ``Failed`` is KubeRay's own
    failure (a deadline, a submitter that failed); ``Suspending``/``Suspended`` (``spec.suspend``,
    Kueue) wait; ``Running`` runs; ``New``, ``Initializing``, ``Waiting`` and ``Retrying`` are pending
    (the cluster is being made again).
    """
    status = status or {}
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("endTime"))
    deployment = str(status.get("jobDeploymentStatus") or "")
    if deployment == "Complete":
        ok = str(status.get("jobStatus") or "").upper() == "SUCCEEDED"
        return ("Completed" if ok else "Failed"), start, end
    if deployment == "Failed":
        return "Failed", start, end
    if deployment in ("Suspending", "Suspended"):
        return "Suspended", None, None
    if deployment == "Running":
        return "Running", start, None
    return "Pending", None, None


def lws_phase(status: Mapping[str, Any] | None, meta: Mapping[str, Any] | None = None) -> Phase:
    """LeaderWorkerSet: Running once a group is ready (``Available``, or ``readyReplicas``); it never ends.

    It writes no start time: the ``Available`` condition's time, else the object's creation.
    """
    status = status or {}
    available = _true(status, "Available")
    if available is None and int(status.get("readyReplicas") or 0) <= 0:
        return "Pending", None, None
    created = parse_time((meta or {}).get("creationTimestamp"))
    start = (_cond_time(available) if available is not None else None) or created
    return "Running", start, None


def suspended(body: Mapping[str, Any]) -> bool:
    """Whether the workload's spec asks it to be suspended (Kueue sets this when it preempts).

    The controllers write their own ``Suspended`` state a moment later; the spec says it first.
    """
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return False
    policy = spec.get("runPolicy")
    return spec.get("suspend") is True or (isinstance(policy, Mapping) and policy.get("suspend") is True)


@dataclass(frozen=True)
class WorkloadKind:
    """One kind of profiled workload.

    Attributes:
        kind, group, version, plural: the API resource.
        owner_kind: the ``created_by_kind`` of its pods in kube_pod_info (``Job`` for child Jobs).
        child_jobs: all its pods belong to child Jobs that kube_job_owner links to ``job_owner_kind``.
        job_owner_kind: the owner kind kube_job_owner gives its child Jobs (a TrainJob's are its
            JobSet's; the MPI Operator's MPIJob owns its launcher Job, its workers directly).
        phase: reads (phase, start, end) from the object's ``.status`` and ``.metadata``.
    """

    kind: str
    group: str
    version: str
    plural: str
    owner_kind: str
    phase: Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], Phase]
    child_jobs: bool = False
    job_owner_kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def handler_id(self) -> str:
        """The id of its watch handler: one per kind and version (MPIJob has two)."""
        base = f"profiled_{self.kind.lower()}"
        return base if self is BY_KIND.get(self.kind, self) else f"{base}_{self.version}"


JOB = WorkloadKind("Job", "batch", "v1", "jobs", "Job", job_phase)
PYTORCHJOB = WorkloadKind("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", kubeflow_phase)
# The MPI Operator's launcher Job is owned by the MPIJob: kube_job_owner links it, like a JobSet's Jobs.
MPIJOB = WorkloadKind("MPIJob", "kubeflow.org", "v2beta1", "mpijobs", "MPIJob", kubeflow_phase, job_owner_kind="MPIJob")
MPIJOB_V1 = WorkloadKind("MPIJob", "kubeflow.org", "v1", "mpijobs", "MPIJob", kubeflow_phase)
JOBSET = WorkloadKind(
    "JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", "Job", jobset_phase, child_jobs=True, job_owner_kind="JobSet"
)
TRAINJOB = WorkloadKind(
    "TrainJob",
    "trainer.kubeflow.org",
    "v1alpha1",
    "trainjobs",
    "Job",
    trainjob_phase,
    child_jobs=True,
    job_owner_kind="JobSet",
)
RAYJOB = WorkloadKind("RayJob", "ray.io", "v1", "rayjobs", "RayCluster", rayjob_phase)
LEADERWORKERSET = WorkloadKind(
    "LeaderWorkerSet", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "StatefulSet", lws_phase
)
KINDS: tuple[WorkloadKind, ...] = (JOB, PYTORCHJOB, MPIJOB, MPIJOB_V1, JOBSET, TRAINJOB, RAYJOB, LEADERWORKERSET)
# Kind -> every version watched, the current one first.
VERSIONS: dict[str, tuple[WorkloadKind, ...]] = {k.kind: tuple(v for v in KINDS if v.kind == k.kind) for k in KINDS}
BY_KIND: dict[str, WorkloadKind] = {kind: versions[0] for kind, versions in VERSIONS.items()}
CUSTOM_KINDS: tuple[WorkloadKind, ...] = tuple(k for k in KINDS if k is not JOB)

_INDEX = re.compile(r"^\d+$")
# KubeRay's generated suffixes: the RayCluster's (<rayjob>-<5>, older <rayjob>-raycluster-<5>),
# and the pods' (<cluster>-head[-<5>], <cluster>-<group>-worker-<5>, older <cluster>-worker-<group>-<5>).
_RAY_CLUSTER = re.compile(r"^(?:raycluster-)?[a-z0-9]{5}-(.+)$")
_RAY_SUBMITTER = re.compile(r"^[a-z0-9]{5}$")
_RAY_WORKER = re.compile(r"^(?:worker-(?P<old>.+)|(?P<new>.+)-worker)-[a-z0-9]{5}$")


def _ray_replica(rest: str) -> str | None:
    if _RAY_SUBMITTER.match(rest):
        return "submitter"  # the submitter Job <name>'s pod
    m = _RAY_CLUSTER.match(rest)
    if m is None:
        return None
    node = m.group(1)
    if node == "head" or node.startswith("head-"):
        return "head"
    w = _RAY_WORKER.match(node)
    return (w.group("old") or w.group("new")).lower() if w else None


def replica_type(kind: str, workload: str, pod: str) -> str | None:
    """The replica type of a workload's pod, from the name its operator gives it.

    The operators name pods after the replica type their labels carry
    (``training.kubeflow.org/replica-type``, ``jobset.sigs.k8s.io/replicatedjob-name``), and
    kube-state-metrics exports names but not those labels by default. PyTorchJob: ``<name>-master-0``,
    ``<name>-worker-3``; MPIJob: ``<name>-launcher`` (``<name>-launcher-<suffix>`` from mpi-operator's
    launcher Job), ``<name>-worker-0``; JobSet and TrainJob:
    ``<name>-<replicated job>-<job index>-<pod index>-<suffix>`` (``node``, ``dataset-initializer``);
    RayJob: ``head``, the worker group's name, or ``submitter``; LeaderWorkerSet: ``leader`` or ``worker``.

    Returns:
        The type in lower case, or None for a batch/v1 Job or a pod not named that way.
    """
    if kind == JOB.kind or not pod.startswith(workload + "-"):
        return None
    rest = pod[len(workload) + 1 :]
    if kind == RAYJOB.kind:
        return _ray_replica(rest)
    if kind == LEADERWORKERSET.kind:
        # <name>-<group> leads its group; <name>-<group>-<worker> works in it.
        depth = len(rest.split("-")) if all(_INDEX.match(p) for p in rest.split("-")) else 0
        return {1: "leader", 2: "worker"}.get(depth)
    parts: Sequence[str] = rest.split("-")
    if kind in (PYTORCHJOB.kind, MPIJOB.kind):
        # One word (master, worker, launcher, chief...); mpi-operator's launcher Job adds a suffix.
        return parts[0].lower() if parts[0] and not _INDEX.match(parts[0]) else None
    words: list[str] = []
    for part in parts:
        if _INDEX.match(part):
            break
        words.append(part)
    if not words or len(words) == len(parts):
        return None  # a child Job's pod always carries its indices: this one is someone else's
    return "-".join(words).lower()
