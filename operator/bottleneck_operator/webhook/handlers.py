"""The kopf admission handler that injects the collector: ``/inject-sidecar`` on the webhook server.

:func:`register` adds the handler to a kopf registry (``bottleneck-operator run`` calls it with
kopf's default one); importing the module registers nothing. The handler never rejects a Job: kopf answers ``allowed: false`` when a handler raises, so
every failure is logged and the Job passes unchanged. The MutatingWebhookConfiguration (the chart's)
adds ``failurePolicy: Ignore`` and a 5 s timeout on top, so an unreachable webhook cannot block
training either.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import kopf

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.inject import inject

HANDLER_ID = "inject-sidecar"

log = logging.getLogger(__name__)

_configured: Settings | None = None


def configure(settings: Settings) -> None:
    """Use these settings for injection (the operator calls this at start-up)."""
    global _configured
    _configured = settings


@functools.cache
def _from_environment() -> Settings:
    no_overrides: dict[str, Any] = {}
    return Settings(**no_overrides)  # every field from BOTTLENECK_* or its default


def current_settings(memo: Any = None) -> Settings:
    """The settings to inject with: ``memo.settings`` or ``memo.state.settings`` if the operator put
    them there, else those given to :func:`configure`, else the environment."""
    if memo is not None:
        for candidate in (getattr(memo, "settings", None), getattr(getattr(memo, "state", None), "settings", None)):
            if isinstance(candidate, Settings):
                return candidate
    return _configured if _configured is not None else _from_environment()


def inject_sidecar(
    body: kopf.Body, patch: kopf.Patch, operation: str | None = None, memo: Any = None, **_: Any
) -> None:
    """Add the collector to an opted-in Job's pod template (see webhook/inject.py).

    The change is handed to kopf as a transformation of the body, from which kopf computes the
    JSON patch it returns to the API server. Only CREATE is mutated: a Job's pod template is
    immutable afterwards, and kopf calls a handler addressed by its URL whatever the operation.
    """
    if operation != "CREATE":
        return
    try:
        raw = dict(body)
        mutated = inject(raw, current_settings(memo))
    except Exception:  # never reject or fail a Job because of the collector
        log.exception("collector not injected: unexpected error")
        return
    if mutated is None:
        return

    def _apply(target: Any) -> None:  # kopf's RawBody: a plain dict
        target.clear()
        target.update(mutated)

    patch.fns.append(_apply)
    # The module's logger, not kopf's: kopf would post an Event for an object that does not exist yet.
    meta = raw.get("metadata") or {}
    log.info(
        "collector injected into Job %s/%s", meta.get("namespace", ""), meta.get("name") or meta.get("generateName", "")
    )


def register(registry: kopf.OperatorRegistry, settings: Settings | None = None) -> None:
    """Register :func:`inject_sidecar` in ``registry``, injecting with ``settings`` when given."""
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
