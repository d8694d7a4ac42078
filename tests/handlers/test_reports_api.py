"""The reports client: idempotent create, the status subresource, and its own error tree."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx2
import kopf
import pytest

from bottleneck_operator.controller.reports_api import ReportsApi, report_body
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.kube.errors import ApiUnavailable, Conflict, KubeError
from bottleneck_operator_dev.demo.cluster import REPORTS, LocalCluster


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_create_conflict_patch_list_delete(cluster: LocalCluster) -> None:
    async def scenario() -> None:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        try:
            await api.create("ml", report_body("ml", "train", "u1"))
            with pytest.raises(Conflict) as err:
                await api.create("ml", report_body("ml", "train", "u1"))
            assert isinstance(err.value, BottleneckError) and err.value.status == 409
            await api.patch_status("ml", "train", {"phase": "Running", "bottleneck": "IO"})
            got = await api.get("ml", "train")
            assert got is not None and got["status"]["bottleneck"] == "IO"
            assert "ownerReferences" not in got["metadata"]
            assert [r["metadata"]["name"] for r in await api.list(None)] == ["train"]
            assert await api.delete("ml", "train") is True
            assert await api.delete("ml", "train") is False
            assert await api.get("ml", "train") is None
        finally:
            await api.close()

    _run(scenario())
    assert cluster.list(REPORTS) == []


def test_no_library_error_leaks() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: connections are refused

    async def scenario() -> None:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=f"http://127.0.0.1:{port}", token="t"))
        try:
            with pytest.raises(ApiUnavailable) as err:
                await api.get("ml", "x")
        finally:
            await api.close()
        assert isinstance(err.value, KubeError)
        assert not isinstance(err.value, httpx2.HTTPError)
        assert isinstance(err.value.__cause__, httpx2.HTTPError)

    _run(scenario())
