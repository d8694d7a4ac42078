"""BottleneckReports through the operator's one Kubernetes client (:mod:`bottleneck_operator.kube`).

kopf talks to the API server for what it watches; the operator's own writes (create a report,
patch its status, list and delete old ones) go through here, with the credentials kopf found.
Failures are the client's own errors (:mod:`bottleneck_operator.kube.errors`), under the project's
tree: callers catch those, not names of this module's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from bottleneck_operator.contract import names
from bottleneck_operator.contract.names import (
    API_GROUP,
    GROUP_VERSION,
    JOB_LABEL,
    LIFECYCLE_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    REPORT_KIND,
    REPORT_PLURAL,
)
from bottleneck_operator.controller.access import CLIENT
from bottleneck_operator.controller.lifecycle import annotation, stale_mirror
from bottleneck_operator.controller.workloads import WorkloadKind
from bottleneck_operator.kube import Credentials, KubeClient, Resource
from bottleneck_operator.kube.errors import NotFound

GROUP, VERSION, PLURAL, KIND, API_VERSION = API_GROUP, names.API_VERSION, REPORT_PLURAL, REPORT_KIND, GROUP_VERSION
REPORTS = Resource(GROUP, VERSION, KIND, PLURAL)

__all__ = ["ReportsApi", "report_body"]

LoginFn = Callable[[], Any]  # returns a kopf ConnectionInfo (read by attribute)
Page = list[dict[str, Any]]  # named here: inside ReportsApi, ``list`` is the method


class ReportsApi:
    """Create, read, patch, list and delete BottleneckReports.

    Args:
        login: returns fresh credentials (a ``kopf.ConnectionInfo``); called lazily, and again
            once after a 401 so rotated tokens keep working.
        concurrency: at most this many requests in flight (1,000 reports per pass stay polite).
        timeout: seconds per request.
    """

    def __init__(self, login: LoginFn, *, concurrency: int = 32, timeout: float = 30.0) -> None:
        self._kube = KubeClient(
            lambda: Credentials.from_login(login()), concurrency=concurrency, timeout=timeout, allowed=CLIENT
        )

    @property
    def kube(self) -> KubeClient:
        """The client itself, for the operator's other objects (the cluster summary)."""
        return self._kube

    @property
    def requests(self) -> int:
        """Requests sent so far."""
        return self._kube.requests

    async def close(self) -> None:
        """Close the client (idempotent)."""
        await self._kube.close()

    async def create(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create a report; raises :class:`~bottleneck_operator.kube.errors.Conflict` when it already exists."""
        return await self._kube.create(REPORTS, namespace, body)

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The report, or None when it does not exist."""
        try:
            return await self._kube.get(REPORTS, namespace, name)
        except NotFound:
            return None

    async def get_workload(self, kind: WorkloadKind, namespace: str, name: str) -> dict[str, Any] | None:
        """A profiled workload's object (read only: the chart grants get on the four kinds), or None."""
        try:
            return await self._kube.get(Resource(kind.group, kind.version, kind.kind, kind.plural), namespace, name)
        except NotFound:
            return None

    async def patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """JSON merge patch of the report (metadata, spec)."""
        return await self._kube.merge_patch(REPORTS, namespace, name, patch)

    async def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
        """JSON merge patch of ``.status`` through the status subresource, then the lifecycle mirror.

        A merge patch carries no resourceVersion, so it never conflicts with a concurrent writer:
        the operator is the only writer of a report's status and always sends whole fields. The
        status subresource ignores metadata, so a status that changes the report's lifecycle (it
        becomes final, or is reset) costs one more patch; a failure of either raises, and the
        caller's retry writes both.
        """
        patched = await self._kube.merge_patch(REPORTS, namespace, name, {"status": dict(status)}, status=True)
        return await self.mirror(patched)

    async def mirror(self, report: dict[str, Any]) -> dict[str, Any]:
        """Bring a whole report's lifecycle annotation in line with its status (no request when it is).

        Returns:
            The report as it now stands.
        """
        stale = stale_mirror(report)
        if stale is None:
            return report
        meta = report.get("metadata") or {}
        patch = {"metadata": {"annotations": {LIFECYCLE_ANNOTATION: stale}}}
        return await self.patch(str(meta.get("namespace") or ""), str(meta.get("name") or ""), patch)

    async def delete(self, namespace: str, name: str) -> bool:
        """Delete a report; False when it was already gone."""
        try:
            await self._kube.delete(REPORTS, namespace, name)
        except NotFound:
            return False
        return True

    async def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """Reports managed by this operator, in one namespace or all of them."""
        items = await self._kube.list(REPORTS, namespace, labels={MANAGED_BY_LABEL: MANAGED_BY})
        # Some servers (and emulators) ignore the selector: filter again here.
        return [i for i in items if _managed(i)]

    async def pages(
        self, namespace: str | None = None, *, limit: int = 100, metadata_only: bool = False
    ) -> AsyncIterator[Page]:
        """Reports as :meth:`list`, a page of at most ``limit`` at a time (the retention sweep's LIST).

        ``metadata_only``: each report's metadata alone where the API server can (kind
        ``PartialObjectMetadata``), whole reports where it cannot.
        """
        labels = {MANAGED_BY_LABEL: MANAGED_BY}
        async for page in self._kube.list_pages(
            REPORTS, namespace, labels=labels, limit=limit, metadata_only=metadata_only
        ):
            yield [i for i in page if _managed(i)]


def _managed(item: Mapping[str, Any]) -> bool:
    return ((item.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def report_body(
    namespace: str,
    job: str,
    uid: str | None,
    *,
    kind: str = "Job",
    api_version: str = "batch/v1",
    report: str | None = None,
) -> dict[str, Any]:
    """A new report for a Job: labels per the chart's conventions, no ownerReference.

    Reports must outlive their Job (Jobs with ``ttlSecondsAfterFinished`` vanish), so the Job is
    referenced by kind, name and uid in the spec, never as an owner (a PyTorchJob's report is named
    after the PyTorchJob, a TrainJob's after the TrainJob). The status is written afterwards
    through the status subresource (an API server drops ``.status`` sent with a create). The
    report is named ``report`` where another workload's report has the workload's name. It
    carries the lifecycle mirror of a report not yet analysed (:mod:`.lifecycle`).
    """
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": report or job,
            "namespace": namespace,
            "labels": {JOB_LABEL: job[:63], MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {LIFECYCLE_ANNOTATION: annotation({"jobKind": kind})},
        },
        "spec": {"jobRef": {"name": job, **({"uid": uid} if uid else {}), "kind": kind, "apiVersion": api_version}},
    }
