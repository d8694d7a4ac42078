"""Which profiled workload a pod belongs to, read from the pod alone (no API call per admission).

The training operators create pods themselves (PyTorchJob, MPIJob) or through child Jobs (JobSet,
and TrainJob through its JobSet), so the collector goes into their pods as they are admitted. A pod
names its workload in its owner references (PyTorchJob, MPIJob) and in the operators' standard
labels: ``training.kubeflow.org/job-name`` (Training Operator), ``jobset.sigs.k8s.io/jobset-name``
(JobSet; a TrainJob's JobSet carries the TrainJob's name, and its pods
``trainer.kubeflow.org/trainjob-ancestor-step``), ``ray.io/cluster`` (KubeRay: the RayCluster a
RayJob named ``<rayjob>-<5 chars>``, or ``<rayjob>-raycluster-<5 chars>`` before KubeRay 1.1;
``ray.io/originated-from-cr-name`` where the pod carries it) and
``leaderworkerset.sigs.k8s.io/name`` (LeaderWorkerSet). Whether that workload is profiled, and how,
is looked up in the operator's own cache of annotated workloads, fed by its watch streams.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TRAINING_JOB_LABEL = "training.kubeflow.org/job-name"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
TRAINJOB_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_ORIGIN_NAME_LABEL = "ray.io/originated-from-cr-name"
RAY_ORIGIN_KIND_LABEL = "ray.io/originated-from-crd"
LWS_LABEL = "leaderworkerset.sigs.k8s.io/name"
_DIRECT_OWNERS = {"PyTorchJob": "kubeflow.org/", "MPIJob": "kubeflow.org/"}
# The kinds whose pods carry a label naming the workload: (label, kind) in the order to try.
_NAMING_LABELS = ((LWS_LABEL, "LeaderWorkerSet"),)
_RAY_CLUSTER_SUFFIX = re.compile(r"-(?:raycluster-)?[a-z0-9]{5}$")


@dataclass(frozen=True)
class Profiled:
    """A profiled workload as the webhook needs it: its annotations' collector switches."""

    collector: bool = True
    host_cgroup: bool = True
    # Its apiVersion, for the Events posted on it (MPIJob is v2beta1 or v1); "" when not known.
    api_version: str = ""


# (namespace, kind, name) -> the profiled workload, None when it is not (or not yet) known.
Lookup = Callable[[str, str, str], Profiled | None]


def candidates(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of the workloads the pod may belong to, the most certain first."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return []
    out: list[tuple[str, str]] = []
    for ref in meta.get("ownerReferences") or ():
        if not isinstance(ref, Mapping):
            continue
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        group = _DIRECT_OWNERS.get(kind)
        if group and name and str(ref.get("apiVersion", "")).startswith(group):
            out.append((kind, name))
    labels = meta.get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    jobset = labels.get(JOBSET_LABEL)
    if isinstance(jobset, str) and jobset:
        kinds = ("TrainJob", "JobSet") if TRAINJOB_STEP_LABEL in labels else ("JobSet", "TrainJob")
        out += [(k, jobset) for k in kinds]
    training = labels.get(TRAINING_JOB_LABEL)
    if isinstance(training, str) and training:
        out += [(k, training) for k in _DIRECT_OWNERS if (k, training) not in out]
    for label, kind in _NAMING_LABELS:
        named = labels.get(label)
        if isinstance(named, str) and named:
            out.append((kind, named))
    out += [("RayJob", ray) for ray in _rayjob_names(labels) if ("RayJob", ray) not in out]
    return out


def _rayjob_names(labels: Mapping[str, Any]) -> list[str]:
    """The RayJob a KubeRay pod may belong to: the origin label, else its RayCluster's name less the suffix."""
    names: list[str] = []
    origin = labels.get(RAY_ORIGIN_NAME_LABEL)
    if isinstance(origin, str) and origin and labels.get(RAY_ORIGIN_KIND_LABEL, "RayJob") == "RayJob":
        names.append(origin)
    cluster = labels.get(RAY_CLUSTER_LABEL)
    if isinstance(cluster, str) and _RAY_CLUSTER_SUFFIX.search(cluster):
        names.append(_RAY_CLUSTER_SUFFIX.sub("", cluster))
    return names


def find_profiled(pod: Mapping[str, Any], namespace: str, lookup: Lookup) -> tuple[str, str, Profiled] | None:
    """The profiled workload the pod belongs to, as (kind, name, switches); None when there is none."""
    for kind, name in candidates(pod):
        found = lookup(namespace, kind, name)
        if found is not None:
            return kind, name, found
    return None
