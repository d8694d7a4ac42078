"""The retention sweep reads the reports a LIST page at a time and acts on each page before the next.

Reports live in the emulator; the sweep goes through the operator's real reports client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest

from bottleneck_operator.controller import retention
from bottleneck_operator.controller.reports_api import ReportsApi, report_body
from bottleneck_operator.controller.state import OperatorState
from bottleneck_operator.kube.errors import KubeError
from bottleneck_operator.reports import rfc3339
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import REPORTS, LocalCluster

NOW = time.time()
HOUR = 3600.0


class _CountingApi(ReportsApi):
    """The real client, noting the size of every page it hands out."""

    pages_seen: list[int]

    async def pages(
        self, namespace: str | None = None, *, limit: int = 100, metadata_only: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]:
        async for page in super().pages(namespace, limit=limit, metadata_only=metadata_only):
            self.pages_seen.append(len(page))
            yield page


def _final(ended: float) -> dict[str, Any]:
    window = {"start": rfc3339(ended - 600), "end": rfc3339(ended), "seconds": 600}
    return {"phase": "Completed", "bottleneck": "IO", "window": window}


def _state(api: ReportsApi) -> OperatorState:
    """An operator's state for a sweep at ``NOW`` with a day's retention."""
    return OperatorState(
        settings=Settings(prometheus_url="http://prometheus:9090", report_retention=24 * HOUR),
        api=api,
        analyzer_factory=lambda: None,  # type: ignore[arg-type,return-value]
        clock=lambda: NOW,
    )


def test_the_sweep_pages_its_list_and_deletes_only_expired_reports(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "SWEEP_PAGE", 40)

    async def scenario() -> int:
        api = _CountingApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        api.pages_seen = []
        try:
            for i in range(130):
                name = f"old-{i}" if i % 4 else f"new-{i}"
                await api.create("ml", report_body("ml", name, f"u{i}"))
                await api.patch_status("ml", name, _final(NOW - (48 * HOUR if i % 4 else 60.0)))
            state = _state(api)
            deleted = await retention.sweep(state)
            assert api.pages_seen and max(api.pages_seen) <= 40 and sum(api.pages_seen) == 130
            assert len(api.pages_seen) >= 4
            return deleted
        finally:
            await api.close()

    deleted = asyncio.run(scenario())
    left = sorted(r["metadata"]["name"] for r in cluster.list(REPORTS))
    assert deleted == 97
    assert left == sorted(f"new-{i}" for i in range(0, 130, 4))


def test_a_list_page_that_fails_loses_nothing_and_a_later_sweep_finishes(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "SWEEP_PAGE", 10)
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503, "message": "etcd leader changed"}

    async def scenario() -> tuple[list[int], int]:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        try:
            for i in range(30):
                # "a-old" sorts first: the first page holds expired reports, deleted before page 2 fails
                name = f"a-old-{i:02d}" if i % 3 else f"z-new-{i:02d}"
                await api.create("ml", report_body("ml", name, f"u{i}"))
                await api.patch_status("ml", name, _final(NOW - (48 * HOUR if i % 3 else 60.0)))
            state = _state(api)
            # The emulator fails the LIST's later pages for a while, as an API server does while etcd
            # changes leader; each failed sweep ends with the error (the pass loop logs it and goes on).
            assert cluster.emulator is not None
            cluster.emulator[lambda req: bool((req.params or {}).get("continue"))][:1] << 503 << status
            # and once with no Content-Type at all, as a proxy in front of it may answer
            cluster.emulator[lambda req: bool((req.params or {}).get("continue"))][:1] << 502
            left_after_failures: list[int] = []
            for _ in range(5):
                try:
                    return left_after_failures, await retention.sweep(state)
                except KubeError as exc:
                    assert exc.status in (None, 502, 503), exc
                    left_after_failures.append(len(cluster.list(REPORTS)))
            raise AssertionError("the sweep never finished")
        finally:
            await api.close()

    left_after_failures, _ = asyncio.run(scenario())
    assert left_after_failures and left_after_failures[0] == 20  # the first page's ten were deleted
    left = sorted(r["metadata"]["name"] for r in cluster.list(REPORTS))
    assert left == sorted(f"z-new-{i:02d}" for i in range(0, 30, 3))
