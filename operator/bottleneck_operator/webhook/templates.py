"""Marking a profiled training workload at its creation, so only its pods reach the pod webhook.

The training operators create pods from the pod templates in their workload's spec. The workload
webhook stamps :data:`PROFILED_POD_LABEL` on those templates when the workload is profiled with a
collector; the pod webhook's ``objectSelector`` selects that label, so the API server sends it the
pods of profiled workloads and no other pod of the cluster (every pod of every Kubeflow or JobSet
workload before). Pure functions over plain dicts.

Where each kind keeps its pod templates: :mod:`bottleneck_operator.controller.pod_templates`. A
``TrainJob`` has none: its pods come from a TrainingRuntime. Trainer copies ``spec.annotations`` to
the JobSet it creates, so the switches are copied there, and that JobSet is marked in turn.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from bottleneck_operator.contract.annotations import SWITCHES
from bottleneck_operator.contract.names import COLLECTOR_NO_HOST_CGROUP_ANNOTATION, PROFILED_POD_LABEL
from bottleneck_operator.controller.pod_templates import POD_TEMPLATES
from bottleneck_operator.controller.workloads import VERSIONS


def _no_templates(spec: dict[str, Any]) -> Iterator[Any]:
    return iter(())


# Kinds whose switches go down to the JobSet they run as (``spec.annotations``).
SWITCHES_DOWN = frozenset({"TrainJob"})


def workload_resources() -> list[tuple[str, str, str]]:
    """(group, version, plural) of every training workload the workload webhook marks."""
    return [(w.group, w.version, w.plural) for kind in (*POD_TEMPLATES, *SWITCHES_DOWN) for w in VERSIONS[kind]]


def mark(workload: Mapping[str, Any], *, no_host_cgroup: str | None) -> dict[str, Any] | None:
    """A copy of a profiled workload with its pod templates labelled; None when nothing changes.

    Args:
        workload: the workload as admitted (already known to be profiled with a collector).
        no_host_cgroup: the Pod Security level that forbids the host cgroup mount, or None; written
            on the workload so that its report can say what the collector does not see.

    Returns:
        The mutated copy, or None (an unknown kind, a malformed spec, nothing to label).
    """
    kind = str(workload.get("kind", ""))
    out = copy.deepcopy(dict(workload))
    spec = out.get("spec")
    meta = out.get("metadata")
    if not isinstance(spec, dict) or not isinstance(meta, dict):
        return None
    changed = False
    if kind in SWITCHES_DOWN:
        changed = _switches_down(meta, spec)
    for template in POD_TEMPLATES.get(kind, _no_templates)(spec):
        if isinstance(template, dict):
            labels = template.setdefault("metadata", {}).setdefault("labels", {})
            if isinstance(labels, dict):
                labels[PROFILED_POD_LABEL] = "true"
                changed = True
    if not changed:
        return None
    if no_host_cgroup is not None:
        annotations = meta.setdefault("annotations", {})
        if isinstance(annotations, dict):
            annotations[COLLECTOR_NO_HOST_CGROUP_ANNOTATION] = no_host_cgroup
    return out


def _switches_down(meta: dict[str, Any], spec: dict[str, Any]) -> bool:
    """Copy the workload's switches into ``spec.annotations``, which Trainer gives its JobSet."""
    given = meta.get("annotations")
    if not isinstance(given, Mapping):
        return False
    down = spec.setdefault("annotations", {})
    if not isinstance(down, dict):
        return False
    for key in SWITCHES:
        if key in given:
            down[key] = given[key]
    return True
