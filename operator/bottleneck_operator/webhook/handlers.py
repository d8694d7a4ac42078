"""The kopf admission handlers that inject the collector: ``/inject-sidecar`` for batch/v1 Jobs,
``/inject-workload-pod`` for the pods of the training operators' workloads.

:func:`register` adds the handlers to a kopf registry (``bottleneck-operator run`` calls it with
kopf's default one); importing the module registers nothing. The handler never rejects a Job: kopf answers ``allowed: false`` when a handler raises, so
every failure is logged and the Job passes unchanged. The MutatingWebhookConfiguration (the chart's)
adds ``failurePolicy: Ignore`` and a 5 s timeout on top, so an unreachable webhook cannot block
training either.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kopf

from bottleneck_operator.contract.annotations import Choice, profile_choice, wants_collector, wants_host_cgroup
from bottleneck_operator.contract.names import COLLECTOR_SKIPPED_ANNOTATION
from bottleneck_operator.controller.workloads import BY_KIND, VERSIONS
from bottleneck_operator.settings import InjectionSettings, Settings
from bottleneck_operator.webhook import unsupported
from bottleneck_operator.webhook.inject import inject_template, injection, wants_injection
from bottleneck_operator.webhook.podsecurity import ENFORCE_LABEL, enforce_level
from bottleneck_operator.webhook.workloads import Lookup, Profiled, candidates, find_profiled

Found = tuple[str, str, Profiled]
# (namespace, kind, name) -> the workload's object from the API, or None.
Fetch = Callable[[str, str, str], Awaitable[Mapping[str, Any] | None]]

HANDLER_ID = "inject-sidecar"
POD_HANDLER_ID = "inject-workload-pod"

log = logging.getLogger(__name__)

SKIPPED_ANNOTATION = COLLECTOR_SKIPPED_ANNOTATION


@dataclass
class AdmissionContext:
    """What the handlers decide with, besides the admitted object.

    Attributes:
        settings: the injection group: the webhook and the collector it injects.
        levels: namespace -> its ``pod-security.kubernetes.io/enforce`` label ("" when unlabelled),
            as the operator's namespace watch saw it; a namespace missing from it is not known yet.
        workloads: the profiled training workloads (see :mod:`.workloads`).
        post: posts an Event (involved object's body, type, reason, message), or None.
        fetch: reads a workload from the API, (namespace, kind, name) -> its object or None: only
            when the cache does not know the workload of a pod (its watch event not seen yet).
    """

    settings: InjectionSettings
    levels: Mapping[str, str] = field(default_factory=dict)
    workloads: Lookup = lambda _ns, _kind, _name: None
    post: Callable[[dict[str, Any], str, str, str], None] | None = None
    fetch: Fetch | None = None


_configured: AdmissionContext | None = None


def configure(
    settings: InjectionSettings,
    *,
    levels: Mapping[str, str] | None = None,
    workloads: Lookup | None = None,
    post: Callable[[dict[str, Any], str, str, str], None] | None = None,
    fetch: Fetch | None = None,
) -> None:
    """Use these settings (and, outside the operator, these namespaces and workloads) for injection."""
    global _configured
    _configured = AdmissionContext(settings, dict(levels or {}), workloads or AdmissionContext.workloads, post, fetch)


@functools.cache
def _from_environment() -> InjectionSettings:
    no_overrides: dict[str, Any] = {}
    return Settings(**no_overrides).injection  # every field from BOTTLENECK_* or its default


def current_settings(memo: Any = None) -> InjectionSettings:
    """The injection settings: ``memo.settings`` or ``memo.state.injection`` if the operator put
    them there, else those given to :func:`configure`, else the environment."""
    if memo is not None:
        for candidate in (getattr(memo, "settings", None), getattr(getattr(memo, "state", None), "injection", None)):
            if isinstance(candidate, InjectionSettings):
                return candidate
    return _configured.settings if _configured is not None else _from_environment()


def current_context(memo: Any = None) -> AdmissionContext:
    """The operator's state when it runs (its namespace levels, workload cache and Event poster),
    else what :func:`configure` was given."""
    settings = current_settings(memo)
    state = getattr(memo, "state", None)
    if state is None or not hasattr(state, "jobs"):
        base = _configured or AdmissionContext(settings)
        return AdmissionContext(settings, base.levels, base.workloads, base.post, base.fetch)

    def lookup(namespace: str, kind: str, name: str) -> Profiled | None:
        tracked = state.jobs.get((namespace, kind, name))
        if tracked is None or tracked.kind != kind or tracked.finished:
            return None
        return Profiled(collector=tracked.collector, host_cgroup=tracked.host_cgroup, api_version=tracked.api_version)

    async def fetch(namespace: str, kind: str, name: str) -> Mapping[str, Any] | None:
        # MPIJob is served as v2beta1 (MPI Operator) or v1 (Training Operator): the other is a 404.
        for version in VERSIONS[kind]:
            found: Mapping[str, Any] | None = await state.api.get_workload(version, namespace, name)
            if found is not None:
                return found
        return None

    return AdmissionContext(settings, state.namespace_levels, lookup, state.poster, fetch)


def namespace_level(ctx: AdmissionContext, namespace: str) -> tuple[str, str | None]:
    """The namespace's enforced Pod Security level, and a note when it is not known.

    A namespace the watch has not shown yet is taken as ``baseline``: the collector goes in without
    the host mount, which every level admits (``restricted`` too, the container meeting its rules).
    """
    if namespace not in ctx.levels:
        return "baseline", f"the Pod Security level of namespace {namespace!r} is not known yet"
    value = ctx.levels[namespace]
    return enforce_level({ENFORCE_LABEL: value} if value else {}), None


def _post(ctx: AdmissionContext, target: dict[str, Any], note: str) -> None:
    meta = target.get("metadata") or {}
    log.warning("%s %s/%s: %s", target.get("kind"), meta.get("namespace"), meta.get("name"), note)
    if ctx.post is not None and meta.get("name"):
        try:
            ctx.post(target, "Warning", "CollectorRestricted", note)
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
        found = find_profiled(raw, ns, ctx.workloads) or await _fetch_profiled(ctx, raw, ns)
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


async def _fetch_profiled(ctx: AdmissionContext, pod: Mapping[str, Any], namespace: str) -> Found | None:
    """The pod's workload read from the API, when the cache missed it; None when none is profiled."""
    if ctx.fetch is None:
        return None
    for kind, name in candidates(pod):
        try:
            obj = await asyncio.wait_for(ctx.fetch(namespace, kind, name), timeout=FETCH_TIMEOUT)
        except Exception:  # the kind not installed, the API slow or down: no collector, no harm
            log.debug("cannot read %s %s/%s", kind, namespace, name, exc_info=True)
            continue
        meta = (obj or {}).get("metadata") or {}
        if obj is not None and profile_choice(meta) is Choice.ON:
            switches = Profiled(wants_collector(meta), wants_host_cgroup(meta), str(obj.get("apiVersion") or ""))
            return kind, name, switches
    return None


# The chart gives the webhook 5 s (timeoutSeconds): a read that takes longer is given up.
FETCH_TIMEOUT = 2.0
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
    """Register :func:`inject_sidecar` (Jobs) and :func:`inject_workload_pod` (training workloads' pods)."""
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
