"""BottleneckReports read through the user's kubeconfig, with kubectl's wording when that fails.

The reads go through the project's one Kubernetes client (:mod:`bottleneck_operator.kube`); its
errors become :class:`PluginError` with the message kubectl would print for the same failure, so a
user reads ``Error from server (NotFound): ...`` from both tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from bottleneck_operator.contract.names import API_GROUP, API_VERSION, REPORT_KIND, REPORT_PLURAL
from bottleneck_operator.errors import EXIT_INTERNAL, BottleneckError
from bottleneck_operator.kube import (
    ApiUnavailable,
    CredentialsError,
    KubeClient,
    KubeError,
    NotFound,
    Resource,
    Unauthorized,
)
from bottleneck_operator.plugin.kubeconfig import Target
from bottleneck_operator.reports import ReportStatus, read_status

T = TypeVar("T")
RESOURCE_NAME = f"{REPORT_PLURAL}.{API_GROUP}"


class PluginError(BottleneckError):
    """A failure to print as it stands (already worded as kubectl words it); exit code 1 as kubectl's."""

    exit_code = EXIT_INTERNAL


def _resource() -> Resource:
    return Resource(API_GROUP, API_VERSION, REPORT_KIND, REPORT_PLURAL)


def _run(target: Target, call: Callable[[KubeClient], Awaitable[T]], *, name: str | None = None) -> T:
    async def scenario() -> T:
        client = KubeClient(lambda: target.credentials, concurrency=4, timeout=15.0)
        try:
            return await call(client)
        finally:
            await client.close()

    try:
        return asyncio.run(scenario())
    except NotFound as exc:
        if name is None:
            raise PluginError(f'error: the server doesn\'t have a resource type "{REPORT_PLURAL}"') from exc
        raise PluginError(f'Error from server (NotFound): {RESOURCE_NAME} "{name}" not found') from exc
    except Unauthorized as exc:
        kind = "Forbidden" if exc.status == 403 else "Unauthorized"
        raise PluginError(f"Error from server ({kind}): {exc}") from exc
    except ApiUnavailable as exc:
        raise PluginError(f"Unable to connect to the server {target.credentials.server}: {exc}") from exc
    except CredentialsError as exc:
        raise PluginError(f"error: {exc}") from exc
    except KubeError as exc:
        raise PluginError(f"Error from server: {exc}") from exc


def get_report(target: Target, namespace: str, name: str) -> dict[str, Any]:
    """One BottleneckReport; :class:`PluginError` (kubectl's NotFound wording) when there is none."""
    return _run(target, lambda c: c.get(_resource(), namespace, name), name=name)


def list_reports(target: Target, namespace: str | None) -> list[dict[str, Any]]:
    """The reports of one namespace (None: every namespace), sorted by namespace and name."""
    found = _run(target, lambda c: c.list(_resource(), namespace))
    return sorted(found, key=lambda r: (r["metadata"].get("namespace", ""), r["metadata"].get("name", "")))


def typed_status(report: Mapping[str, Any]) -> ReportStatus:
    """A report's status as the typed model.

    Fields a newer operator added are left out rather than refused, so an older plugin still
    reads a newer report (the raw dict keeps them for who wants them).
    """
    try:
        return read_status(report.get("status"))
    except ValueError as exc:
        meta = report.get("metadata") or {}
        raise PluginError(
            f"error: report {meta.get('namespace')}/{meta.get('name')} has an unreadable status: {exc}"
        ) from exc
