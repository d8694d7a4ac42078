"""The kopf admission handlers that inject the collector: ``/inject-sidecar`` for batch/v1 Jobs,
``/mark-workload`` for the training operators' workloads (their pod templates get the label the pod
webhook selects, see webhook/templates.py), ``/inject-workload-pod`` for those workloads' pods.

:func:`register` adds the handlers to a kopf registry (``bottleneck-operator run`` calls it with
kopf's default one); importing the module registers nothing. The handler never rejects a Job: kopf answers ``allowed: false`` when a handler raises, so
every failure is logged and the Job passes unchanged. The MutatingWebhookConfiguration (the chart's)
adds ``failurePolicy: Ignore`` and a 5 s timeout on top, so an unreachable webhook cannot block
training either.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

import kopf

from bottleneck_operator.contract.annotations import (
    Choice,
    invalid_switches,
    profile_choice,
    refusal,
    wants_collector,
    wants_host_cgroup,
)
from bottleneck_operator.contract.names import COLLECTOR_NO_HOST_CGROUP_ANNOTATION, COLLECTOR_SKIPPED_ANNOTATION
from bottleneck_operator.controller.workloads import BY_KIND
from bottleneck_operator.settings import InjectionSettings
from bottleneck_operator.webhook import unsupported
from bottleneck_operator.webhook.context import AdmissionContext as AdmissionContext
from bottleneck_operator.webhook.context import configure as configure
from bottleneck_operator.webhook.context import current_context as current_context
from bottleneck_operator.webhook.context import current_settings as current_settings
from bottleneck_operator.webhook.context import namespace_level as namespace_level
from bottleneck_operator.webhook.inject import inject_template, injection, wants_injection
from bottleneck_operator.webhook.podsecurity import allows_host_path
from bottleneck_operator.webhook.templates import SWITCHES_DOWN, mark, workload_resources
from bottleneck_operator.webhook.workloads import Profiled, candidates, find_profiled

Found = tuple[str, str, Profiled]

HANDLER_ID = "inject-sidecar"
POD_HANDLER_ID = "inject-workload-pod"
WORKLOAD_HANDLER_ID = "mark-workload"

log = logging.getLogger(__name__)

SKIPPED_ANNOTATION = COLLECTOR_SKIPPED_ANNOTATION


def _post(ctx: AdmissionContext, target: dict[str, Any], note: str, reason: str = "CollectorRestricted") -> None:
    """Log a warning about the admitted object and post it as a Warning Event on it."""
    meta = target.get("metadata") or {}
    log.warning("%s %s/%s: %s", target.get("kind"), meta.get("namespace"), meta.get("name"), note)
    if ctx.post is not None and meta.get("name"):
        try:
            ctx.post(target, "Warning", reason, note)
        except Exception:  # an Event is a courtesy: never fail the admission for it
            log.debug("could not post the Event", exc_info=True)


def inject_sidecar(
    body: kopf.Body,
    patch: kopf.Patch,
    operation: str | None = None,
    memo: Any = None,
    namespace: str | None = None,
    **_: Any,
) -> None:
    """Add the collector to an opted-in Job's pod template (see webhook/inject.py).

    The change is handed to kopf as a transformation of the body, from which kopf computes the
    JSON patch it returns to the API server. Only CREATE is mutated: a Job's pod template is
    immutable afterwards, and kopf calls a handler addressed by its URL whatever the operation.
    What is injected depends on the namespace's Pod Security level (see webhook/podsecurity.py).
    """
    if operation != "CREATE":
        return
    try:
        raw = dict(body)
        meta = raw.get("metadata") or {}
        ctx = current_context(memo)
        ns = namespace or meta.get("namespace") or ""
        level, unknown = namespace_level(ctx, ns)
        mutated, note = injection(raw, ctx.settings, level=level)
        if mutated is None and note is not None and wants_injection(raw):
            # Nothing injected on purpose: say so in the template, so the report does not take it for
            # a Job created while the webhook was down.
            mutated = copy.deepcopy(raw)
            tmeta = mutated["spec"]["template"].setdefault("metadata", {})
            tmeta.setdefault("annotations", {})[SKIPPED_ANNOTATION] = "pod-security"
        elif mutated is not None and note is not None:
            # The collector goes in without the host mount: the Job says so, and its report with it.
            mutated["metadata"].setdefault("annotations", {})[COLLECTOR_NO_HOST_CGROUP_ANNOTATION] = level
        _warn_invalid_switches(ctx, "batch/v1", "Job", ns, raw)
    except Exception:  # never reject or fail a Job because of the collector
        log.exception("collector not injected: unexpected error")
        return
    if note is not None and _first_time(ns, "Job", None if unknown else str(meta.get("name")), note):
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": meta.get("name"), "namespace": ns}}
        _post(ctx, job, f"{note} ({unknown})" if unknown else note)
    if mutated is None:
        return
    _hand_to_kopf(patch, mutated)
    # The module's logger, not kopf's: kopf would post an Event for an object that does not exist yet.
    log.info("collector injected into Job %s/%s", ns, meta.get("name") or meta.get("generateName", ""))


async def inject_workload_pod(
    body: kopf.Body,
    patch: kopf.Patch,
    operation: str | None = None,
    memo: Any = None,
    namespace: str | None = None,
    **_: Any,
) -> None:
    """Add the collector to a pod of a profiled training workload (PyTorchJob, MPIJob, JobSet, TrainJob).

    Their pods are created by the training operators (or their child Jobs), so the collector is
    injected into each pod as it is admitted, when its workload is in the operator's cache of
    profiled workloads (see webhook/workloads.py); a workload the cache does not know yet (its
    watch event still on the way) is read from the API once. A pod is never rejected.
    """
    if operation != "CREATE":
        return
    try:
        raw = dict(body)
        ctx = current_context(memo)
        ns = namespace or (raw.get("metadata") or {}).get("namespace") or ""
        found = find_profiled(raw, ns, ctx.workloads) or await _read_profiled(ctx, raw, ns)
        if found is None or not found[2].collector:
            return
        kind, name, profiled = found
        level, unknown = namespace_level(ctx, ns)
        wanted = ctx.settings.sidecar_mount_host_cgroup and profiled.host_cgroup
        result = inject_template(raw, ctx.settings, host_cgroup=wanted, level=level)
    except Exception:  # never reject or fail a pod because of the collector
        log.exception("collector not injected: unexpected error")
        return
    # Once per workload, not once per pod (once per namespace while its level is not known).
    if result.note is not None and _first_time(ns, kind, None if unknown else name, result.note, always=False):
        api_version = profiled.api_version or _API_VERSIONS.get(kind, "")
        target = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": ns}}
        _post(ctx, target, f"{result.note} ({unknown})" if unknown else result.note)
    if result.obj is not None:
        _hand_to_kopf(patch, result.obj)
        log.info("collector injected into a pod of %s %s/%s", kind, ns, name)


async def _read_profiled(ctx: AdmissionContext, pod: Mapping[str, Any], namespace: str) -> Found | None:
    """The pod's workload read from the API (once per workload: see webhook/owners.py) when the
    operator's watch has not shown it yet; None when none is profiled."""
    fetch = ctx.fetch
    if fetch is None:
        return None

    async def read(ns: str, kind: str, name: str) -> Profiled | None:
        obj = await fetch(ns, kind, name)
        meta = (obj or {}).get("metadata") or {}
        if obj is None or profile_choice(meta) is not Choice.ON:
            return None
        return Profiled(wants_collector(meta), wants_host_cgroup(meta), str(obj.get("apiVersion") or ""))

    return await ctx.owners.first_profiled(namespace, candidates(pod), read, budget=FETCH_BUDGET)


# The chart gives the webhook 5 s (timeoutSeconds): reads still unanswered after this are not waited
# for, so the answer (no collector for this pod) leaves in time; they go on and serve the next pods.
FETCH_BUDGET = 3.0
_noted: set[tuple[str, str, str | None, str]] = set()
_NOTED_LIMIT = 10_000


def _first_time(namespace: str, kind: str, name: str | None, note: str, *, always: bool = True) -> bool:
    """Whether to post this note: every Job gets its own (``always``) unless the namespace's level is
    unknown (``name`` None), which is said once per namespace, not on every Job there."""
    if always and name is not None:
        return True
    key = (namespace, kind, name, note)
    if key in _noted:
        return False
    if len(_noted) >= _NOTED_LIMIT:
        _noted.clear()  # a bound on memory; at worst a note is posted again
    _noted.add(key)
    return True


_API_VERSIONS = {kind: workload.api_version for kind, workload in BY_KIND.items()}


def _warn_invalid_switches(ctx: AdmissionContext, api_version: str, kind: str, ns: str, obj: Mapping[str, Any]) -> None:
    """A Warning Event on a profiled workload for each collector switch that is neither true nor false.

    The profile switch itself is the operator's to warn about (it decides whether to analyse).
    """
    meta = obj.get("metadata") or {}
    if profile_choice(meta) is not Choice.ON or not ctx.post or not meta.get("name"):
        return
    target = {"apiVersion": api_version, "kind": kind, "metadata": {"name": meta.get("name"), "namespace": ns}}
    for key, value in invalid_switches(meta):
        _post(ctx, target, refusal(key, value), "InvalidAnnotation")


def mark_workload(
    body: kopf.Body,
    patch: kopf.Patch,
    operation: str | None = None,
    memo: Any = None,
    namespace: str | None = None,
    **_: Any,
) -> None:
    """Label the pod templates of a profiled training workload (see webhook/templates.py).

    The pod webhook's objectSelector selects that label, so only these workloads' pods reach it.
    The workload's switches are remembered for its pods, which then need no read of the workload.
    """
    if operation != "CREATE":
        return
    try:
        raw = dict(body)
        meta = raw.get("metadata") or {}
        kind, name = str(raw.get("kind", "")), str(meta.get("name") or "")
        ctx = current_context(memo)
        ns = namespace or meta.get("namespace") or ""
        if not any(ref.get("kind") in _API_VERSIONS for ref in meta.get("ownerReferences") or ()):
            _warn_invalid_switches(ctx, str(raw.get("apiVersion", "")), kind, ns, raw)
        if not wants_collector(meta):
            return
        wanted = ctx.settings.sidecar_mount_host_cgroup and wants_host_cgroup(meta)
        level = namespace_level(ctx, ns)[0]
        mutated = mark(raw, no_host_cgroup=None if not wanted or allows_host_path(level) else level)
        if name and kind not in SWITCHES_DOWN:
            switches = Profiled(True, wants_host_cgroup(meta), str(raw.get("apiVersion", "")))
            ctx.owners.remember((ns, kind, name), switches)
    except Exception:  # never reject or fail a workload because of the collector
        log.exception("workload not marked for the collector: unexpected error")
        return
    if mutated is not None:
        _hand_to_kopf(patch, mutated)
        log.info("pods of %s %s/%s marked for the collector", kind, ns, name)


def _hand_to_kopf(patch: kopf.Patch, mutated: dict[str, Any]) -> None:
    def _apply(target: Any) -> None:  # kopf's RawBody: a plain dict
        target.clear()
        target.update(mutated)

    patch.fns.append(_apply)


def notice_unsupported(
    body: kopf.Body, memo: Any = None, namespace: str | None = None, dryrun: bool = False, **_: Any
) -> None:
    """A Warning Event on an annotated object of a kind the operator does not profile (see webhook/unsupported.py)."""
    try:
        unsupported.notice(body, current_context(memo).post, namespace=namespace, dryrun=dryrun)
    except Exception:  # never reject or fail an object because of a courtesy
        log.exception("unsupported-kind notice failed")


def register(registry: kopf.OperatorRegistry, settings: InjectionSettings | None = None) -> None:
    """Register :func:`inject_sidecar` (Jobs), :func:`mark_workload` (training workloads) and
    :func:`inject_workload_pod` (their pods)."""
    if settings is not None:
        configure(settings)
    kopf.on.mutate(
        "batch",
        "v1",
        "jobs",
        id=HANDLER_ID,
        operations=["CREATE"],
        ignore_failures=True,  # failurePolicy: Ignore, should kopf ever manage the configuration
        side_effects=False,
        registry=registry,
    )(inject_sidecar)
    kopf.on.mutate(
        "",
        "v1",
        "pods",
        id=POD_HANDLER_ID,
        operations=["CREATE"],
        ignore_failures=True,
        side_effects=False,
        registry=registry,
    )(inject_workload_pod)
    for resource in workload_resources():
        group, version, plural = resource
        kopf.on.mutate(
            group,
            version,
            plural,
            id=WORKLOAD_HANDLER_ID,  # one path for every kind: kopf matches the resource as well
            operations=["CREATE"],
            ignore_failures=True,
            side_effects=False,
            registry=registry,
        )(mark_workload)
    for group, version, plural in unsupported.WATCHED:
        kopf.on.mutate(
            group,
            version,
            plural,
            id=unsupported.HANDLER_ID,
            operations=["CREATE", "UPDATE"],
            ignore_failures=True,
            side_effects=True,  # an Event: the chart declares NoneOnDryRun, and dry runs post nothing
            registry=registry,
        )(notice_unsupported)
