"""The retention sweep reads the reports a LIST page at a time and acts on each page before the next.

Reports live in the emulator; the sweep goes through the operator's real reports client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bottleneck_operator.controller import retention
from bottleneck_operator.controller.reports_api import ReportsApi, report_body
from bottleneck_operator.controller.state import OperatorState
from bottleneck_operator.demo.cluster import REPORTS, LocalCluster
from bottleneck_operator.reports import rfc3339
from bottleneck_operator.settings import Settings

NOW = time.time()
HOUR = 3600.0


class _Info:
    """Credentials as kopf's ConnectionInfo carries them (only what the client reads)."""

    def __init__(self, server: str) -> None:
        self.server, self.token, self.scheme = server, "t", None
        self.insecure, self.ca_path, self.ca_data = None, None, None
        self.certificate_path = self.certificate_data = self.private_key_path = self.private_key_data = None
        self.username = self.password = None


class _CountingApi(ReportsApi):
    """The real client, noting the size of every page it hands out."""

    pages_seen: list[int]

    async def pages(self, namespace: str | None = None, *, limit: int = 100) -> AsyncIterator[list[dict[str, Any]]]:
        async for page in super().pages(namespace, limit=limit):
            self.pages_seen.append(len(page))
            yield page


def _final(ended: float) -> dict[str, Any]:
    window = {"start": rfc3339(ended - 600), "end": rfc3339(ended), "seconds": 600}
    return {"phase": "Completed", "bottleneck": "IO", "window": window}


def test_the_sweep_pages_its_list_and_deletes_only_expired_reports(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "SWEEP_PAGE", 40)

    async def scenario() -> int:
        api = _CountingApi(lambda: _Info(cluster.url))
        api.pages_seen = []
        try:
            for i in range(130):
                name = f"old-{i}" if i % 4 else f"new-{i}"
                await api.create("ml", report_body("ml", name, f"u{i}"))
                await api.patch_status("ml", name, _final(NOW - (48 * HOUR if i % 4 else 60.0)))
            state = OperatorState(
                settings=Settings(prometheus_url="http://prometheus:9090", report_retention=24 * HOUR),
                api=api,
                analyzer_factory=lambda: None,  # type: ignore[arg-type,return-value]
                clock=lambda: NOW,
            )
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
