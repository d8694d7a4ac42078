"""Serving the admission webhook with kopf's own HTTPS server.

- :func:`configure_admission` sets kopf's ``settings.admission`` for ``bottleneck-operator run``:
  kopf's :class:`kopf.WebhookServer` on ``webhook_port`` with the certificate pair from
  ``webhook_cert_dir`` (``tls.crt``/``tls.key``). cert-manager renews the Secret, the
  kubelet swaps the mounted files atomically, and kopf's server, which hashes the files every
  :data:`CERT_CHECK_INTERVAL` seconds, restarts its listener with a new SSL context when they
  change: the next handshake presents the new certificate, with no restart of the operator.
  The chart owns the MutatingWebhookConfiguration, so kopf is told not to manage one.
- :func:`serve_admission` serves only the admission endpoint, without connecting to an API
  server: kopf's HTTPS server and the same handler function ``run`` registers, answered through
  kopf's public patch object (kopf's own request dispatch needs a discovered cluster). Tests and
  benchmarks POST AdmissionReviews to it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import json
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, cast

import kopf
from aiohttp import web

from bottleneck_operator.aio import stop_task
from bottleneck_operator.settings import InjectionSettings
from bottleneck_operator.webhook import handlers, unsupported
from bottleneck_operator.webhook.context import Fetch
from bottleneck_operator.webhook.owners import OwnerCache
from bottleneck_operator.webhook.templates import workload_resources
from bottleneck_operator.webhook.workloads import Lookup

# Seconds between two reads of the certificate files. cert-manager renews well ahead of expiry
# (a third of the lifetime by default), so a minute would do; 30 s keeps a renewal unnoticed.
CERT_CHECK_INTERVAL = 30.0
JOBS = {"group": "batch", "version": "v1", "plural": "jobs", "kind": "Job", "namespaced": True}
_HANDLERS: dict[tuple[Any, Any, Any], Callable[..., Any]] = {
    ("batch", "v1", "jobs"): handlers.inject_sidecar,
    ("", "v1", "pods"): handlers.inject_workload_pod,
    **{resource: handlers.notice_unsupported for resource in unsupported.WATCHED},
    **{resource: handlers.mark_workload for resource in workload_resources()},
}


def admission_server(
    settings: InjectionSettings, *, addr: str = "0.0.0.0", check_interval: float = CERT_CHECK_INTERVAL
) -> kopf.WebhookServer:
    """kopf's HTTPS webhook server as the settings describe it.

    Args:
        settings: ``webhook_port`` and ``webhook_cert_dir`` (without one kopf generates a self-signed
            pair, which needs the ``certbuilder`` package: development only).
        addr: listening address.
        check_interval: seconds between two reads of the certificate files.

    Returns:
        The server object for ``settings.admission.server``.
    """
    certfile = keyfile = None
    if settings.webhook_cert_dir is not None:
        certfile = str(Path(settings.webhook_cert_dir) / "tls.crt")
        keyfile = str(Path(settings.webhook_cert_dir) / "tls.key")
    return kopf.WebhookServer(
        addr=addr, port=settings.webhook_port, certfile=certfile, pkeyfile=keyfile, file_check_interval=check_interval
    )


def configure_admission(kopf_settings: kopf.OperatorSettings, settings: InjectionSettings) -> None:
    """Point kopf's admission machinery at our server (call from the operator's startup handler).

    Args:
        kopf_settings: the ``settings`` kopf passes to ``@kopf.on.startup`` handlers.
        settings: the injection group (``Settings.injection``); with ``webhook_enabled`` false
            nothing is served.
    """
    handlers.configure(settings)
    if not settings.webhook_enabled:
        return
    kopf_settings.admission.server = admission_server(settings)
    kopf_settings.admission.managed = None  # the chart ships the MutatingWebhookConfiguration


@contextlib.asynccontextmanager
async def serve_admission(
    settings: InjectionSettings,
    *,
    addr: str = "127.0.0.1",
    port: int | None = None,
    certfile: str | Path | None = None,
    keyfile: str | Path | None = None,
    insecure: bool = False,
    levels: Mapping[str, str] | None = None,
    workloads: Lookup | None = None,
    post: Callable[[dict[str, Any], str, str, str], None] | None = None,
    fetch: Fetch | None = None,
    owners: OwnerCache | None = None,
    check_interval: float = CERT_CHECK_INTERVAL,
) -> AsyncIterator[str]:
    """Serve the ``inject-sidecar`` admission endpoint alone, on kopf's HTTPS server.

    Args:
        settings: injection settings.
        addr: listening address.
        port: listening port; a free one when None.
        certfile: server certificate (PEM); with ``keyfile``. Needed unless ``insecure``.
        keyfile: its private key.
        insecure: plain HTTP (tests of the request path without TLS).
        levels: namespace -> Pod Security enforce label ("" unlabelled), as the operator's watch
            would give them; namespaces missing are not known (the host mount is left out).
        workloads: the profiled training workloads, for pods (as the operator's cache would answer).
        post: posts the Events the handlers raise.
        fetch: reads a workload from the API when ``workloads`` does not know it.
        owners: the cache of what ``fetch`` answered (a new one from the settings when None).
        check_interval: seconds between two reads of the certificate files (renewals are served
            from the next read on, as in the operator).

    Yields:
        The endpoint URL, e.g. ``https://127.0.0.1:9443/inject-sidecar``.
    """
    handlers.configure(settings, levels=levels, workloads=workloads, post=post, fetch=fetch, owners=owners)
    server = kopf.WebhookServer(
        addr=addr,
        # Fixed once: kopf restarts its listener on a renewal and would pick another free port.
        port=port or _free_port(addr),
        certfile=None if certfile is None else str(certfile),
        pkeyfile=None if keyfile is None else str(keyfile),
        insecure=insecure,
        file_check_interval=check_interval,
    )
    async with _serving(server) as base:
        yield f"{base.rstrip('/')}/{handlers.HANDLER_ID}"


@contextlib.asynccontextmanager
async def _serving(server: kopf.WebhookServer) -> AsyncIterator[str]:
    """Run kopf's server as kopf's admission loop does; yields its base URL.

    kopf's server restarts with renewed certificate files when asked for its next configuration,
    so the configurations are followed in a task for as long as the server runs.
    """

    async def webhookfn(request: Any, *, webhook: str | None = None, **_: Any) -> dict[str, Any]:
        return await review(request)

    configs = server(webhookfn).__aiter__()  # type: ignore[arg-type]
    client_config = await configs.__anext__()

    async def follow_renewals() -> None:
        async for _ in configs:
            pass

    renewals = asyncio.create_task(follow_renewals(), name="admission certificate renewals")
    try:
        yield client_config.get("url") or ""
    finally:
        await stop_task(renewals)
        await configs.aclose()  # type: ignore[attr-defined]


def _free_port(addr: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        port: int = s.getsockname()[1]
        return port


async def review(request: Any) -> dict[str, Any]:
    """The AdmissionReview response to one request, from :func:`handlers.inject_sidecar`.

    Built the way kopf builds it: the handler transforms a :class:`kopf.Patch`, whose JSON patch
    against the submitted object is returned base64-encoded. The handler never raises, so the Job
    is always allowed.
    """
    payload = request.get("request") or {}
    resource = payload.get("resource") or {}
    handler = _HANDLERS.get((resource.get("group"), resource.get("version"), resource.get("resource")))
    if handler is None:
        # As kopf answers for a resource without handlers; failurePolicy: Ignore admits it unchanged.
        raise web.HTTPNotFound(reason="no admission handler for this resource")
    raw = payload.get("object") or payload.get("oldObject")
    if raw is None or payload.get("userInfo") is None:
        raise web.HTTPBadRequest(reason="the admission request lacks its object or user info")
    body = kopf.Body(cast(kopf.RawBody, raw))
    patch = kopf.Patch(body=body)
    done = handler(
        body=body,
        patch=patch,
        operation=payload.get("operation"),
        namespace=payload.get("namespace"),
        dryrun=bool(payload.get("dryRun")),
    )
    if inspect.isawaitable(done):
        await done
    response: dict[str, Any] = {"uid": payload.get("uid", ""), "allowed": True}
    ops = patch.as_json_patch()
    if ops:
        response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode("ascii")
        response["patchType"] = "JSONPatch"
    return {
        "apiVersion": request.get("apiVersion", "admission.k8s.io/v1"),
        "kind": request.get("kind", "AdmissionReview"),
        "response": response,
    }
