"""The sweep lists reports' metadata alone and reads a report whole only to act on it, or to mirror it.

Reports live in the emulator, written either through the operator's reports client (which keeps
the ``bottleneck.dev/lifecycle`` mirror) or, for reports of an operator from before the mirror,
through the driver's client straight to the API (no mirror). Whole reads are the emulator's count
of GETs of each report.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import kopf

from bottleneck_operator.contract.names import LIFECYCLE_ANNOTATION
from bottleneck_operator.controller import retention
from bottleneck_operator.controller.jobs import ensure_report
from bottleneck_operator.controller.lifecycle import with_mirror
from bottleneck_operator.controller.reports_api import ReportsApi, report_body
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.reports import rfc3339
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import REPORTS, LocalCluster

NOW = time.time()
HOUR = 3600.0
PLURAL = "bottleneckreports"


class _ListingApi(ReportsApi):
    """The real client, keeping every item its LIST pages hand out."""

    listed: list[dict[str, Any]]

    async def pages(
        self, namespace: str | None = None, *, limit: int = 100, metadata_only: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]:
        async for page in super().pages(namespace, limit=limit, metadata_only=metadata_only):
            self.listed.extend(page)
            yield page


def _final(ended: float, phase: str = "Completed") -> dict[str, Any]:
    window = {"start": rfc3339(ended - 600), "end": rfc3339(ended), "seconds": 600}
    return {"phase": phase, "bottleneck": "IO", "window": window, "lastAnalysisTime": rfc3339(ended)}


def _running() -> dict[str, Any]:
    return {"phase": "Running", "bottleneck": "CPU", "lastAnalysisTime": rfc3339(NOW - 60)}


def _state(api: ReportsApi, *, settled: bool, tracked: Iterable[str] = ()) -> OperatorState:
    state = OperatorState(
        settings=Settings(prometheus_url="http://prometheus:9090", report_retention=24 * HOUR),
        api=api,
        analyzer_factory=lambda: None,  # type: ignore[arg-type,return-value]
        clock=lambda: NOW,
    )
    if settled:  # the watch has listed every Job: an untracked report's Job is gone
        state.started = time.monotonic() - 10 * state.analysis.interval
    for name in tracked:  # a running Job with its report in place
        job = TrackedJob("ml", name, f"uid-{name}", phase="Running", report_ready=True, start=NOW - HOUR)
        state.jobs[job.key] = job
    return state


def _legacy(cluster: LocalCluster, name: str, status: dict[str, Any]) -> None:
    """A report as an operator from before the mirror left it: no lifecycle annotation."""
    body = report_body("ml", name, f"uid-{name}")
    del body["metadata"]["annotations"]
    cluster.create(REPORTS, "ml", body)
    cluster.patch(REPORTS, "ml", name, {"status": status}, sub="status")


def _whole_reads(cluster: LocalCluster) -> dict[str, int]:
    assert cluster.emulator is not None
    return {name: n for (plural, _, name), n in cluster.emulator.reads.items() if plural == PLURAL}


def _mirror(cluster: LocalCluster, name: str) -> dict[str, str]:
    report = cluster.get(REPORTS, "ml", name)
    assert report is not None
    value: dict[str, str] = json.loads(report["metadata"]["annotations"][LIFECYCLE_ANNOTATION])
    return value


def _phase(cluster: LocalCluster, name: str) -> str | None:
    report = cluster.get(REPORTS, "ml", name)
    return None if report is None else report["status"]["phase"]


async def _sweep(state: OperatorState) -> int:
    try:
        return await retention.sweep(state)
    finally:
        await state.api.close()


def test_reports_without_the_mirror_are_swept_from_their_status_and_mirrored_once(cluster: LocalCluster) -> None:
    _legacy(cluster, "expired", _final(NOW - 48 * HOUR))
    _legacy(cluster, "kept", _final(NOW - HOUR))
    _legacy(cluster, "orphan", _running())
    _legacy(cluster, "running", _running())

    deleted = asyncio.run(
        _sweep(
            _state(
                ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t")),
                settled=True,
                tracked=["running"],
            )
        )
    )

    assert _whole_reads(cluster) == {"expired": 1, "kept": 1, "orphan": 1, "running": 1}
    assert deleted == 1 and cluster.get(REPORTS, "ml", "expired") is None
    assert (_phase(cluster, "kept"), _phase(cluster, "orphan"), _phase(cluster, "running")) == (
        "Completed",
        "Failed",
        "Running",
    )
    assert _mirror(cluster, "kept") == {"jobKind": "Job", "phase": "Completed", "ended": rfc3339(NOW - HOUR)}
    assert _mirror(cluster, "orphan") == {"jobKind": "Job", "phase": "Failed", "ended": rfc3339(NOW - 60)}
    assert _mirror(cluster, "running") == {"jobKind": "Job"}

    # Mirrored now: the next sweep reads none of them whole, and keeps them all.
    before = _whole_reads(cluster)
    api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
    assert asyncio.run(_sweep(_state(api, settled=True, tracked=["running"]))) == 0
    assert _whole_reads(cluster) == before
    assert sorted(r["metadata"]["name"] for r in cluster.list(REPORTS)) == ["kept", "orphan", "running"]


def _written_by_the_operator(cluster: LocalCluster) -> None:
    async def write() -> None:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        try:
            statuses = {f"expired-{i}": _final(NOW - 48 * HOUR, "Failed" if i else "Completed") for i in range(3)}
            statuses |= {f"kept-{i}": _final(NOW - HOUR) for i in range(3)}
            statuses |= {"orphan": _running(), "running": _running()}
            for name, status in statuses.items():
                await api.create("ml", report_body("ml", name, f"uid-{name}"))
                await api.patch_status("ml", name, status)
        finally:
            await api.close()

    asyncio.run(write())


def test_mirrored_reports_are_listed_as_metadata_and_read_whole_only_to_be_deleted_or_closed(
    cluster: LocalCluster,
) -> None:
    _written_by_the_operator(cluster)
    api = _ListingApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
    api.listed = []

    deleted = asyncio.run(_sweep(_state(api, settled=True, tracked=["running"])))

    assert len(api.listed) == 8
    assert all(
        i["kind"] == "PartialObjectMetadata" and set(i) == {"apiVersion", "kind", "metadata"} for i in api.listed
    )
    assert deleted == 3
    assert _whole_reads(cluster) == {"expired-0": 1, "expired-1": 1, "expired-2": 1, "orphan": 1}
    left = sorted(r["metadata"]["name"] for r in cluster.list(REPORTS))
    assert left == ["kept-0", "kept-1", "kept-2", "orphan", "running"]
    assert _phase(cluster, "orphan") == "Failed" and _mirror(cluster, "orphan")["phase"] == "Failed"


def test_a_server_that_lists_whole_reports_is_swept_from_them_without_reading_any_again(
    cluster: LocalCluster,
) -> None:
    assert cluster.emulator is not None
    cluster.emulator.partial_metadata = False  # as an API server that cannot list metadata alone
    _written_by_the_operator(cluster)
    _legacy(cluster, "old-expired", _final(NOW - 48 * HOUR))
    api = _ListingApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
    api.listed = []

    deleted = asyncio.run(_sweep(_state(api, settled=True, tracked=["running"])))

    assert len(api.listed) == 9 and all(i["kind"] == "BottleneckReport" and "status" in i for i in api.listed)
    assert deleted == 4 and _whole_reads(cluster) == {}
    left = sorted(r["metadata"]["name"] for r in cluster.list(REPORTS))
    assert left == ["kept-0", "kept-1", "kept-2", "orphan", "running"]
    assert _phase(cluster, "orphan") == "Failed"


def test_a_mirror_out_of_date_never_decides_alone(cluster: LocalCluster) -> None:
    # "reset": its mirror still says final and long expired, but the report was reset for a new Job
    # of the same name (its mirror write lost); "ended": the other way round.
    cluster.create(REPORTS, "ml", with_mirror({**report_body("ml", "reset", "u1"), "status": _final(NOW - 48 * HOUR)}))
    cluster.patch(REPORTS, "ml", "reset", {"status": {"phase": "Pending", "window": None}}, sub="status")
    cluster.create(REPORTS, "ml", report_body("ml", "ended", "u2"))
    cluster.patch(REPORTS, "ml", "ended", {"status": _final(NOW - 48 * HOUR)}, sub="status")

    # Before the watch has settled, the mirror of "reset" makes it a candidate: read whole, it is
    # kept (and its mirror corrected); "ended" looks alive and untracked, which decides nothing yet.
    assert (
        asyncio.run(
            _sweep(_state(ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t")), settled=False))
        )
        == 0
    )
    assert _whole_reads(cluster) == {"reset": 1}
    assert _phase(cluster, "reset") == "Pending" and _mirror(cluster, "reset") == {"jobKind": "Job"}

    # Settled, both are untracked: "ended" is read whole and deleted as expired; "reset" is closed.
    assert (
        asyncio.run(
            _sweep(_state(ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t")), settled=True))
        )
        == 1
    )
    assert cluster.get(REPORTS, "ml", "ended") is None
    assert _phase(cluster, "reset") == "Failed"


def test_status_writes_keep_the_mirror_and_cost_a_patch_only_when_it_changes(cluster: LocalCluster) -> None:
    async def scenario() -> list[int]:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        costs = []
        try:
            await api.create("ml", report_body("ml", "train", "u1", kind="PyTorchJob", api_version="kubeflow.org/v1"))
            for status in ({"phase": "Pending"}, _running(), _final(NOW - HOUR), {"bottleneck": "GPU"}):
                before = api.requests
                await api.patch_status("ml", "train", status)
                costs.append(api.requests - before)
        finally:
            await api.close()
        return costs

    fresh = cluster.create(REPORTS, "ml", report_body("ml", "fresh", None))
    assert fresh["metadata"]["annotations"][LIFECYCLE_ANNOTATION] == '{"jobKind":"Job"}'
    # Pending and Running change nothing the sweep reads; becoming final does, once.
    assert asyncio.run(scenario()) == [1, 1, 2, 1]
    assert _mirror(cluster, "train") == {"jobKind": "PyTorchJob", "phase": "Completed", "ended": rfc3339(NOW - HOUR)}


def test_an_adopted_report_of_an_older_operator_gets_its_mirror(cluster: LocalCluster) -> None:
    _legacy(cluster, "adopted", _final(NOW - HOUR))

    async def scenario() -> None:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        state = _state(api, settled=True)
        job = TrackedJob("ml", "adopted", "uid-adopted", phase="Completed")
        try:
            await ensure_report(state, job)
        finally:
            await api.close()
        assert job.report_ready and job.status is not None and job.status.phase == "Completed"

    asyncio.run(scenario())
    assert _mirror(cluster, "adopted") == {"jobKind": "Job", "phase": "Completed", "ended": rfc3339(NOW - HOUR)}


def test_the_sweep_pauses_after_each_page_as_long_as_the_page_took_within_a_cap() -> None:
    assert retention.pause_after(0.02) == 0.02 * retention.SWEEP_PACE
    assert retention.pause_after(-1.0) == 0.0  # a clock step backwards never stops the sweep
    assert retention.pause_after(60.0) == retention.SWEEP_PAUSE_MAX
