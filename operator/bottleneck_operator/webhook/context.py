"""What the admission handlers decide with, besides the admitted object: the injection settings, the
namespaces' Pod Security levels, the profiled workloads and the owner cache, from the running
operator's state or from :func:`configure` (the webhook server alone, tests).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bottleneck_operator.controller.workloads import VERSIONS
from bottleneck_operator.settings import InjectionSettings, Settings
from bottleneck_operator.webhook.owners import OwnerCache
from bottleneck_operator.webhook.podsecurity import ENFORCE_LABEL, enforce_level
from bottleneck_operator.webhook.workloads import Lookup, Profiled

# (namespace, kind, name) -> the workload's object from the API, or None.
Fetch = Callable[[str, str, str], Awaitable[Mapping[str, Any] | None]]


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
        owners: what ``fetch`` answered, kept so that a workload is read once, not once per pod.
    """

    settings: InjectionSettings
    levels: Mapping[str, str] = field(default_factory=dict)
    workloads: Lookup = lambda _ns, _kind, _name: None
    post: Callable[[dict[str, Any], str, str, str], None] | None = None
    fetch: Fetch | None = None
    owners: OwnerCache = field(default_factory=OwnerCache)


_configured: AdmissionContext | None = None
_owners: OwnerCache | None = None  # the running operator's, made from its settings on first use


def configure(
    settings: InjectionSettings,
    *,
    levels: Mapping[str, str] | None = None,
    workloads: Lookup | None = None,
    post: Callable[[dict[str, Any], str, str, str], None] | None = None,
    fetch: Fetch | None = None,
    owners: OwnerCache | None = None,
) -> None:
    """Use these settings (and, outside the operator, these namespaces and workloads) for injection."""
    global _configured, _owners
    cache = owners if owners is not None else OwnerCache(settings.owner_cache_size, settings.owner_cache_ttl)
    _owners = cache
    _configured = AdmissionContext(
        settings, dict(levels or {}), workloads or AdmissionContext.workloads, post, fetch, cache
    )


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
    global _owners
    settings = current_settings(memo)
    state = getattr(memo, "state", None)
    if _owners is None:
        _owners = OwnerCache(settings.owner_cache_size, settings.owner_cache_ttl)
    if state is None or not hasattr(state, "jobs"):
        base = _configured or AdmissionContext(settings, owners=_owners)
        return AdmissionContext(settings, base.levels, base.workloads, base.post, base.fetch, base.owners)

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

    return AdmissionContext(settings, state.namespace_levels, lookup, state.poster, fetch, _owners)


def namespace_level(ctx: AdmissionContext, namespace: str) -> tuple[str, str | None]:
    """The namespace's effective Pod Security level, and a note when it is not known.

    An unlabelled namespace takes the cluster's default (``pod_security_default_level``). A
    namespace the watch has not shown yet is taken as ``baseline`` (``restricted`` when that is the
    default): the collector goes in without the host mount, which every level admits.
    """
    default = ctx.settings.pod_security_default_level
    if namespace not in ctx.levels:
        unknown = "restricted" if default == "restricted" else "baseline"
        return unknown, f"the Pod Security level of namespace {namespace!r} is not known yet"
    value = ctx.levels[namespace]
    return enforce_level({ENFORCE_LABEL: value} if value else {}, default), None
