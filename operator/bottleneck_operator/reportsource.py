"""BottleneckReports read through the user's kubeconfig, with kubectl's wording when that fails.

Shared by the kubectl plugin and ``analyze --from-report``, below both. The reads go through the
project's one Kubernetes client (:mod:`bottleneck_operator.kube`); its errors become
:class:`KubectlError` with the message kubectl would print for the same failure, so a user reads
``Error from server (NotFound): ...`` from both tools. The objects come back as the API returns
them (``-o json|yaml`` print them as they stand); :func:`typed` reads one as the typed
:class:`~bottleneck_operator.reports.BottleneckReport` that everything else takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
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
from bottleneck_operator.kube.kubeconfig import Target
from bottleneck_operator.kube.selectors import SelectorError
from bottleneck_operator.reports import BottleneckReport, read_report

T = TypeVar("T")
RESOURCE_NAME = f"{REPORT_PLURAL}.{API_GROUP}"


class KubectlError(BottleneckError):
    """A failure to print as it stands (already worded as kubectl words it); exit code 1 as kubectl's."""

    exit_code = EXIT_INTERNAL


def _resource() -> Resource:
    return Resource(API_GROUP, API_VERSION, REPORT_KIND, REPORT_PLURAL)


def call_api(
    target: Target,
    call: Callable[[KubeClient], Awaitable[T]],
    *,
    not_found: str | None = None,
    timeout: float | None = 15.0,
) -> T:
    """Run ``call`` with a client logged in as ``target``; every failure is a :class:`KubectlError` in
    kubectl's words (``not_found``: the NotFound message naming what was looked for; without it, the
    server serves no reports at all)."""

    async def scenario() -> T:
        client = KubeClient(lambda: target.credentials, concurrency=4, timeout=timeout)
        try:
            return await call(client)
        finally:
            await client.close()

    try:
        return asyncio.run(scenario())
    except SelectorError as exc:
        raise KubectlError(f"error: {exc}") from exc
    except NotFound as exc:
        if not_found is None:
            raise KubectlError(f'error: the server doesn\'t have a resource type "{REPORT_PLURAL}"') from exc
        raise KubectlError(not_found) from exc
    except Unauthorized as exc:
        kind = "Forbidden" if exc.status == 403 else "Unauthorized"
        raise KubectlError(f"Error from server ({kind}): {exc}") from exc
    except ApiUnavailable as exc:
        raise KubectlError(f"Unable to connect to the server {target.credentials.server}: {exc}") from exc
    except CredentialsError as exc:
        raise KubectlError(f"error: {exc}") from exc
    except KubeError as exc:
        raise KubectlError(f"Error from server: {exc}") from exc


def get_report(target: Target, namespace: str, name: str) -> dict[str, Any]:
    """One BottleneckReport; :class:`KubectlError` (kubectl's NotFound wording) when there is none."""
    missing = f'Error from server (NotFound): {RESOURCE_NAME} "{name}" not found'
    return call_api(target, lambda c: c.get(_resource(), namespace, name), not_found=missing)


def list_reports(target: Target, namespace: str | None, selector: str = "") -> list[dict[str, Any]]:
    """The reports of one namespace (None: every namespace) matching a label selector, by namespace and name."""
    found = call_api(target, lambda c: c.list(_resource(), namespace, selector=selector))
    return sorted(found, key=lambda r: (r["metadata"].get("namespace", ""), r["metadata"].get("name", "")))


Event = Callable[[str, dict[str, Any]], None]


def watch_reports(
    target: Target, namespace: str | None, selector: str, on_event: Event, *, duration: float | None = None
) -> None:
    """Call ``on_event(type, report)`` for every change to the matching reports until interrupted.

    The stream starts with an ADDED event for each report that exists (the API's own semantics);
    the caller skips those it has already shown. ``duration``: stop after this many seconds
    (kubectl's ``--request-timeout`` on a watch), quietly.
    """

    async def stream(client: KubeClient) -> None:
        events: AsyncIterator[tuple[str, dict[str, Any]]] = client.watch(_resource(), namespace, selector=selector)
        async for kind, report in events:
            on_event(kind, report)

    async def follow(client: KubeClient) -> None:
        try:
            async with asyncio.timeout(duration):
                await stream(client)
        except TimeoutError:
            return

    # A watch waits for changes as long as the user wants: no read timeout.
    call_api(target, follow, timeout=None)


def typed(report: Mapping[str, Any]) -> BottleneckReport:
    """A report from the API as the typed :class:`BottleneckReport`.

    Fields a newer operator added are left out rather than refused, so an older plugin still
    reads a newer report (``raw`` keeps them for ``-o json|yaml``).

    Raises:
        KubectlError: a known field holds a value this version refuses.
    """
    try:
        return read_report(report)
    except ValueError as exc:
        meta = report.get("metadata")
        key = "/".join(str(meta.get(k)) for k in ("namespace", "name")) if isinstance(meta, Mapping) else "?"
        raise KubectlError(f"error: report {key} has an unreadable status: {exc}") from exc
