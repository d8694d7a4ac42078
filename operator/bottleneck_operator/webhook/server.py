"""Serving the admission webhook with kopf's own HTTPS server.

- :func:`configure_admission` sets kopf's ``settings.admission`` for ``bottleneck-operator run``:
  kopf's :class:`kopf.WebhookServer` on ``Settings.webhook_port`` with the certificate pair from
  ``Settings.webhook_cert_dir`` (``tls.crt``/``tls.key``, re-read by kopf when they are renewed).
  The chart owns the MutatingWebhookConfiguration, so kopf is told not to manage one.
- :func:`serve_admission` serves only the admission endpoint, without connecting to an API
  server: kopf's server and its admission request handling, with the resource registered by hand
  instead of discovered. Tests and benchmarks POST AdmissionReviews to it; it is the same request
  path ``run`` serves once kopf has discovered ``batch/v1 jobs``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kopf

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook import handlers

JOBS = {"group": "batch", "version": "v1", "plural": "jobs", "kind": "Job", "namespaced": True}


def admission_server(settings: Settings, *, addr: str = "0.0.0.0") -> kopf.WebhookServer:
    """kopf's HTTPS webhook server as the settings describe it.

    Args:
        settings: ``webhook_port`` and ``webhook_cert_dir`` (without one kopf generates a self-signed
            pair, which needs the ``certbuilder`` package: development only).
        addr: listening address.

    Returns:
        The server object for ``settings.admission.server``.
    """
    certfile = keyfile = None
    if settings.webhook_cert_dir is not None:
        certfile = str(Path(settings.webhook_cert_dir) / "tls.crt")
        keyfile = str(Path(settings.webhook_cert_dir) / "tls.key")
    return kopf.WebhookServer(addr=addr, port=settings.webhook_port, certfile=certfile, pkeyfile=keyfile)


def configure_admission(kopf_settings: kopf.OperatorSettings, settings: Settings) -> None:
    """Point kopf's admission machinery at our server (call from the operator's startup handler).

    Args:
        kopf_settings: the ``settings`` kopf passes to ``@kopf.on.startup`` handlers.
        settings: the operator's settings; with ``webhook_enabled`` false nothing is served.
    """
    handlers.configure(settings)
    if not settings.webhook_enabled:
        return
    kopf_settings.admission.server = admission_server(settings)
    kopf_settings.admission.managed = None  # the chart ships the MutatingWebhookConfiguration


@contextlib.asynccontextmanager
async def serve_admission(
    settings: Settings,
    *,
    addr: str = "127.0.0.1",
    port: int | None = None,
    certfile: str | Path | None = None,
    keyfile: str | Path | None = None,
    insecure: bool = False,
) -> AsyncIterator[str]:
    """Serve the ``inject-sidecar`` admission endpoint alone, through kopf's request handling.

    Args:
        settings: injection settings.
        addr: listening address.
        port: listening port; a free one when None.
        certfile: server certificate (PEM); with ``keyfile``. Needed unless ``insecure``.
        keyfile: its private key.
        insecure: plain HTTP (tests of the request path without TLS).

    Yields:
        The endpoint URL, e.g. ``https://127.0.0.1:9443/inject-sidecar``.
    """
    # kopf internals: the same objects kopf's reactor wires together in ``spawn_tasks``.
    from kopf._cogs.structs import ephemera, references
    from kopf._core.engines import admission, indexing
    from kopf._core.reactor import inventory

    handlers.configure(settings)
    registry = kopf.OperatorRegistry()
    handlers.register(registry)
    insights = references.Insights()
    insights.webhook_resources.add(references.Resource(**JOBS))  # type: ignore[arg-type]
    webhookfn: Any = functools.partial(
        admission.serve_admission_request,
        settings=kopf.OperatorSettings(),
        registry=registry,
        insights=insights,
        memories=inventory.ResourceMemories(),
        memobase=ephemera.AnyMemo(ephemera.Memo()),
        indices=indexing.OperatorIndexers().indices,
    )
    server = kopf.WebhookServer(
        addr=addr,
        port=port,
        certfile=None if certfile is None else str(certfile),
        pkeyfile=None if keyfile is None else str(keyfile),
        insecure=insecure,
    )
    configs = server(webhookfn).__aiter__()
    try:
        client_config = await configs.__anext__()
        base = client_config.get("url") or ""
        yield f"{base.rstrip('/')}/{handlers.HANDLER_ID}"
    finally:
        await configs.aclose()  # type: ignore[attr-defined]
