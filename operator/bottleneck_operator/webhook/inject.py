"""What the admission webhook adds to a profiled Job: pure functions over plain dicts.

:func:`inject` mutates a copy of a Job into its profiled form, :func:`plan_injection` expresses the
same change as RFC 6902 JSON-patch operations. Both leave anything that is not an opted-in, well
formed batch/v1 Job untouched (None / []), so the webhook can never turn a bad input into a rejected
Job. See docs/sidecar.md for the container spec and the reasons behind each field.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch

from bottleneck_operator import __version__
from bottleneck_operator.contract.annotations import wants_collector, wants_host_cgroup
from bottleneck_operator.contract.names import COLLECTOR_CONTAINER as CONTAINER_NAME
from bottleneck_operator.contract.names import COLLECTOR_LABEL
from bottleneck_operator.contract.names import COLLECTOR_PORT_NAME as PORT_NAME
from bottleneck_operator.settings import InjectionSettings
from bottleneck_operator.webhook.podsecurity import admitted

CGROUP_VOLUME = "bottleneck-host-cgroup"
CGROUP_MOUNT = "/host/sys/fs/cgroup"
NONROOT_UID = 65532  # the conventional "nonroot" user of distroless images


def wants_injection(job: Mapping[str, Any]) -> bool:
    """True when the object is a Job that opted in to profiling and not out of the collector.

    Args:
        job: the admitted object as a dict.

    Returns:
        Whether :func:`inject` should be applied.
    """
    if not isinstance(job, Mapping) or job.get("kind") != "Job":
        return False
    if str(job.get("apiVersion", "batch/v1")) != "batch/v1":
        return False
    meta = job.get("metadata")
    return isinstance(meta, Mapping) and wants_collector(meta)


def collector_container(
    settings: InjectionSettings, *, host_cgroup: bool, processes: bool, network: bool = True
) -> dict[str, Any]:
    """The collector as a native sidecar (an init container with ``restartPolicy: Always``).

    Args:
        settings: image, port, period and resources.
        host_cgroup: mount the node's cgroup file system (read-only) and read the pod's cgroup there.
        processes: read process states (off when the pod shares the host's PID namespace).
        network: count the pod's network bytes (off when the pod shares the node's network namespace:
            there the count would be the node's, neighbours included).

    Returns:
        The container spec.
    """
    args = ["sidecar", "--port", str(settings.sidecar_port), "--period", _num(settings.sidecar_period)]
    if host_cgroup:
        args += ["--cgroup-root", CGROUP_MOUNT]
    if not processes:
        args.append("--no-processes")
    if not network:
        args.append("--no-network")
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": settings.sidecar_image,
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "command": ["bottleneck-operator"],
        "args": args,
        "ports": [{"name": PORT_NAME, "containerPort": settings.sidecar_port, "protocol": "TCP"}],
        "env": [
            _field_env("POD_NAME", "metadata.name"),
            _field_env("POD_NAMESPACE", "metadata.namespace"),
            _field_env("POD_UID", "metadata.uid"),
            _field_env("NODE_NAME", "spec.nodeName"),
            # The root file system is read-only: no bytecode cache to write.
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ],
        "resources": {
            "requests": {"cpu": settings.sidecar_cpu_request, "memory": settings.sidecar_memory_request},
            "limits": {"cpu": settings.sidecar_cpu_limit, "memory": settings.sidecar_memory_limit},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "runAsGroup": NONROOT_UID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if host_cgroup:
        container["volumeMounts"] = [{"name": CGROUP_VOLUME, "mountPath": CGROUP_MOUNT, "readOnly": True}]
    return container


def inject(job: Mapping[str, Any], settings: InjectionSettings, *, level: str = "privileged") -> dict[str, Any] | None:
    """A copy of ``job`` with the collector added, or None when nothing should change.

    Nothing changes for: objects that are not opted-in batch/v1 Jobs, Jobs opted out of the
    collector, pod templates that already carry it (idempotence, by container name), malformed
    templates, templates whose containers already use the collector's port, and namespaces whose
    Pod Security level admits no collector.

    Args:
        job: the Job as the API server sent it.
        settings: the collector's image, port, resources and access switches.
        level: the namespace's enforced Pod Security level (see :mod:`.podsecurity`).

    Returns:
        The mutated copy, or None.
    """
    return injection(job, settings, level=level)[0]


def injection(
    job: Mapping[str, Any], settings: InjectionSettings, *, level: str = "privileged"
) -> tuple[dict[str, Any] | None, str | None]:
    """As :func:`inject`, with the reason when the Pod Security level cut the injection down."""
    if _pod_spec(job) is None:
        return None, None
    wanted = settings.sidecar_mount_host_cgroup and wants_host_cgroup(job["metadata"])
    template = inject_template(job["spec"]["template"], settings, host_cgroup=wanted, level=level)
    if template.obj is None:
        return None, template.note
    mutated = copy.deepcopy(dict(job))
    mutated["spec"]["template"] = template.obj
    return mutated, template.note


@dataclass(frozen=True)
class Injected:
    """A pod template (or pod) with the collector, or None; and why less was injected than asked."""

    obj: dict[str, Any] | None
    note: str | None = None


def inject_template(
    template: Mapping[str, Any], settings: InjectionSettings, *, host_cgroup: bool, level: str
) -> Injected:
    """Add the collector to a pod template or a pod (both have ``metadata`` and ``spec``).

    Args:
        template: the pod template or pod.
        settings: the collector's image, port, resources and access switches.
        host_cgroup: the host cgroup mount is wanted (setting and annotation).
        level: the namespace's enforced Pod Security level.

    Returns:
        The mutated copy (None when nothing changes) and the Pod Security note, if any.
    """
    pod = template.get("spec")
    if not isinstance(pod, Mapping):
        return Injected(None)
    everyone = _all_containers(pod)
    if everyone is None or any(c.get("name") == CONTAINER_NAME for c in everyone):
        return Injected(None)
    if _uses_port(everyone, settings.sidecar_port):
        return Injected(None)
    volumes = pod.get("volumes", [])
    if host_cgroup and any(isinstance(v, Mapping) and v.get("name") == CGROUP_VOLUME for v in volumes):
        host_cgroup = False  # a volume of that name already exists: do not guess, read without it
    host_pid = pod.get("hostPID") is True
    allowed = admitted(
        level, host_cgroup=host_cgroup, container=collector_container(settings, host_cgroup=False, processes=True)
    )
    if not allowed.collector:
        return Injected(None, allowed.note)
    host_cgroup = allowed.host_cgroup
    # shareProcessNamespace cannot be combined with hostPID; an explicit false is the user's choice.
    share = settings.sidecar_share_process_namespace and not host_pid and pod.get("shareProcessNamespace") is not False

    mutated = copy.deepcopy(dict(template))
    pod_out = mutated["spec"]
    collector = collector_container(
        settings, host_cgroup=host_cgroup, processes=not host_pid, network=pod.get("hostNetwork") is not True
    )
    if _guaranteed(everyone):
        # Requests below limits would demote the pod from Guaranteed to Burstable QoS (and, with the
        # static CPU manager, cost the trainer its exclusive cores): ask for the limits outright.
        collector["resources"]["requests"] = dict(collector["resources"]["limits"])
    # First in line: the collector starts before other init containers, so their I/O is seen too.
    pod_out["initContainers"] = [collector, *pod_out.get("initContainers", [])]
    if host_cgroup:
        pod_out["volumes"] = [
            *pod_out.get("volumes", []),
            {"name": CGROUP_VOLUME, "hostPath": {"path": "/sys/fs/cgroup", "type": "Directory"}},
        ]
    if share:
        pod_out["shareProcessNamespace"] = True
    if not _mark_collector(mutated):
        return Injected(None)
    return Injected(mutated, allowed.note)


def _mark_collector(mutated: dict[str, Any]) -> bool:
    """Label and annotate the template as carrying the collector; False when its metadata is not a map."""
    tmeta = mutated.setdefault("metadata", {})
    if not isinstance(tmeta, dict):
        return False
    labels = tmeta.setdefault("labels", {})
    if isinstance(labels, dict):
        labels[COLLECTOR_LABEL] = "true"  # lets a PodMonitor select exactly the pods with a collector
    tann = tmeta.setdefault("annotations", {})
    if isinstance(tann, dict):
        tann[f"{COLLECTOR_LABEL}-version"] = __version__
    return True


def _pod_spec(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The opted-in Job's pod spec, None when the object is not one or its template is malformed."""
    if not wants_injection(job):
        return None
    spec = job.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    pod = template.get("spec") if isinstance(template, Mapping) else None
    return pod if isinstance(pod, Mapping) else None


def _all_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """Containers and init containers, None when any list (volumes too) or entry is malformed."""
    containers = pod.get("containers")
    init_containers = pod.get("initContainers", [])
    if not isinstance(containers, list) or not isinstance(init_containers, list):
        return None
    if not isinstance(pod.get("volumes", []), list):
        return None
    everyone = [c for c in (*containers, *init_containers) if isinstance(c, Mapping)]
    return everyone if len(everyone) == len(containers) + len(init_containers) else None


def plan_injection(job: Mapping[str, Any], settings: InjectionSettings) -> list[dict[str, Any]]:
    """The JSON-patch operations that turn ``job`` into its profiled form; [] when nothing changes.

    Args:
        job: the Job as the API server sent it.
        settings: as for :func:`inject`.

    Returns:
        RFC 6902 operations relative to ``job``.
    """
    mutated = inject(job, settings)
    if mutated is None:
        return []
    ops: list[dict[str, Any]] = jsonpatch.make_patch(dict(job), mutated).patch
    return ops


def _guaranteed(containers: list[Mapping[str, Any]]) -> bool:
    """Whether the pod is in the Guaranteed QoS class: every container has CPU and memory limits
    and its requests, where given, equal them."""
    for c in containers:
        resources = c.get("resources")
        if not isinstance(resources, Mapping):
            return False
        limits = resources.get("limits")
        requests = resources.get("requests") or {}
        if not isinstance(limits, Mapping) or not isinstance(requests, Mapping):
            return False
        for key in ("cpu", "memory"):
            if key not in limits or str(requests.get(key, limits[key])) != str(limits[key]):
                return False
    return bool(containers)


def _uses_port(containers: list[Mapping[str, Any]], port: int) -> bool:
    for c in containers:
        ports = c.get("ports")
        if isinstance(ports, list) and any(isinstance(p, Mapping) and p.get("containerPort") == port for p in ports):
            return True
    return False


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
