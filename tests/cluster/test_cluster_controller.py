"""The operator's side: a Job digest from a real window's shape, the summary written to the API
(kmock's emulator), and the cluster gauges with bounded labels."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import numpy as np
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from bottleneck_operator.analysis.cluster import ClusterBook, find_stragglers
from bottleneck_operator.contract.window import JobWindow, PodWindow, SignalBlock
from bottleneck_operator.controller import summary
from bottleneck_operator.controller.reports_api import ReportsApi
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.reports import DataQualityStatus, HeadroomRange, RecommendationItem, ReportStatus
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import SUMMARIES, LocalCluster
from bottleneck_operator_dev.simulation.cluster import draw_cluster

T0 = 1.8e9


@pytest.fixture()
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        monkeypatch.setenv("KUBECONFIG", str(c.write_kubeconfig(tmp_path / "kubeconfig")))
        yield c


def _pod(name: str, node: str, sm: float, io_wait: float) -> PodWindow:
    t = 12
    signals = {
        "sm_active": np.full(t, sm),
        "gpu_util": np.full(t, 1.0),
        "sm_clock_mhz": np.full(t, 1410.0),
        "node_net_rx_bps": np.full(t, 1e9),
        "node_net_tx_bps": np.full(t, 5e8),
        "sc_io_read_bps": np.r_[np.full(t - 2, 4e8), np.nan, np.nan],  # gaps are skipped, not zeros
        "sc_psi_io_some": np.full(t, io_wait),
    }
    return PodWindow(pod=name, node=node, gpu_model="H100", gpu_count=8, signals=SignalBlock.of(signals))


def _window(pods: list[PodWindow]) -> JobWindow:
    return JobWindow(namespace="ml", job="resnet-7f9c2", start=T0, end=T0 + 600, step=50.0,
                     timestamps=np.arange(T0, T0 + 600, 50.0), pods=tuple(pods))  # fmt: skip


def _status() -> ReportStatus:
    return ReportStatus(
        bottleneck="IO",
        gpu_active=0.6,
        data_quality=DataQualityStatus(families=["dcgm"], missing_families=[], coverage=1.0, pods=4, gpus=32),
        recommendations=[RecommendationItem(action="Cache the dataset", signal="sc_psi_io_some", detail="")],
        headroom=HeadroomRange(low=1.4, high=1.9, basis="measured waits"),
    )


def test_a_digest_reads_the_window_the_pass_fetched() -> None:
    job = TrackedJob(namespace="ml", name="resnet-7f9c2", uid="u", kind="PyTorchJob", start=T0 - 3000)
    pods = [
        _pod(f"resnet-7f9c2-worker-{i}", f"gpu-node-{i}", sm, 0.02 + i / 100) for i, sm in enumerate((0.8, 0.81, 0.79))
    ]
    pods.append(_pod("resnet-7f9c2-worker-3", "gpu-node-9", 0.45, 0.4))
    digest = summary.digest_of(job, _window(pods), _status(), now=T0 + 600)
    assert (digest.bottleneck, digest.gpus, digest.seconds, digest.workload) == ("IO", 32, 3600, "ml/PyTorchJob/resnet")
    assert digest.locations == {"node": ("gpu-node-0", "gpu-node-1", "gpu-node-2", "gpu-node-9")}
    assert (digest.action, digest.headroom, digest.end) == ("Cache the dataset", 1.4, T0 + 600)
    peer = digest.peers[3]
    assert (peer.activity, peer.net_bps, peer.read_bps, peer.io_wait) == pytest.approx((0.45, 1.5e9, 4e8, 0.4))
    assert digest.throttled is None  # no clock-event reasons exported

    (straggler,) = find_stragglers(digest)
    assert (straggler.pod, straggler.node, straggler.gpu, straggler.cause) == (
        "resnet-7f9c2-worker-3", "gpu-node-9", None, "storage",
    )  # fmt: skip


def test_a_pass_names_the_stragglers_in_the_jobs_own_report() -> None:
    from bottleneck_operator.contract.verdict import Bottleneck, Verdict
    from bottleneck_operator.pipeline import JobRequest, JobResult

    job = TrackedJob(namespace="ml", name="resnet-7f9c2", uid="u", start=T0 - 3000)
    pods = [
        _pod(f"resnet-7f9c2-worker-{i}", f"gpu-node-{i}", sm, 0.02 + i / 100) for i, sm in enumerate((0.8, 0.81, 0.79))
    ]
    slow = _window([*pods, _pod("resnet-7f9c2-worker-3", "gpu-node-9", 0.45, 0.4)])
    healthy = _window([*pods, _pod("resnet-7f9c2-worker-3", "gpu-node-9", 0.8, 0.02)])
    state = OperatorState(Settings(prometheus_url="http://127.0.0.1:9"), None, lambda: None, clock=lambda: T0 + 600)  # type: ignore[arg-type,return-value]
    verdict = Verdict(bottleneck=Bottleneck.IO, confidence=0.9, probabilities={"IO": 0.9})
    results = []
    for window in (slow, healthy):
        request = JobRequest("ml", "resnet-7f9c2", T0, T0 + 600)
        results.append(JobResult(request=request, window=window, verdict=verdict, status=_status()))
        summary.observe(state, results[-1:], {id(request): job})
    (named,) = results[0].status.stragglers or []
    assert (named.pod, named.node, named.cause) == ("resnet-7f9c2-worker-3", "gpu-node-9", "storage")
    assert 0.4 < named.share < 0.5 and {e.signal for e in named.evidence} >= {"activity", "io_wait"}
    assert results[1].status.stragglers is None  # peers that agree: nothing named
    assert "stragglers" not in results[1].status.dump()


def _gauges(state: OperatorState) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(state.metrics.render().decode()):
        if family.name.startswith("bottleneck_operator_cluster_"):
            out[family.name] = [dict(s.labels) for s in family.samples]
    return out


def test_the_summary_is_written_every_pass_and_its_gauges_follow(cluster: LocalCluster) -> None:
    sim = draw_cluster(5200, jobs=400, nodes=80, pattern="hot-filesystem")
    now = max(j.end for j in sim.jobs)

    async def scenario() -> None:
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=cluster.url, token="t"))
        state = OperatorState(Settings(prometheus_url="http://127.0.0.1:9"), api, lambda: None, clock=lambda: now)  # type: ignore[arg-type,return-value]
        try:
            state.cluster.record(sim.jobs[:10])
            await summary.refresh(state)  # creates the object
            state.cluster.record(sim.jobs)
            await summary.refresh(state)  # patches its status
            got = cluster.get(SUMMARIES, None, "cluster")
            assert got is not None and got["status"]["hotSpots"]
            # A later summary with fewer classes and no hot spot leaves nothing of the earlier one behind.
            state.cluster = ClusterBook()
            state.cluster.record([j for j in sim.jobs if j.bottleneck == "GPU"][:5])
            await summary.refresh(state)
            later = cluster.get(SUMMARIES, None, "cluster")
            assert later is not None and later["status"]["byClass"]["IO"] == 0 and later["status"]["jobs"] == 5
            assert later["status"]["hotSpots"] == [] and "topRecommendations" in later["status"]
            state.cluster.record(sim.jobs)
            await summary.refresh(state)
        finally:
            await api.close()
        gauges = _gauges(state)
        assert {tuple(sorted(labels)) for labels in gauges["bottleneck_operator_cluster_jobs"]} == {
            ("bottleneck", "namespace")
        }
        assert {x["dimension"] for x in gauges["bottleneck_operator_cluster_hotspots"]} == {"storage"}

    asyncio.run(scenario())
    got: dict[str, Any] | None = cluster.get(SUMMARIES, None, "cluster")
    assert got is not None and "namespace" not in got["metadata"]
    status = got["status"]
    assert status["jobs"] == len(sim.jobs)
    assert sum(status["byClass"].values()) == len(sim.jobs)
    assert [(h["dimension"], h["location"]) for h in status["hotSpots"]] == [("storage", sim.fault.location)]  # type: ignore[union-attr]
    assert got["spec"]["lookbackSeconds"] == 7 * 24 * 3600.0


async def _api_without_the_crd() -> tuple[web.AppRunner, str]:
    """An API server that knows no ClusterBottleneckSummary: every request is a 404 Status."""

    async def not_found(request: web.Request) -> web.Response:
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                  "message": "the server could not find the requested resource"}  # fmt: skip
        return web.json_response(status, status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", not_found)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def test_without_the_crd_the_operator_says_so_once_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> OperatorState:
        runner, url = await _api_without_the_crd()
        api = ReportsApi(lambda: kopf.ConnectionInfo(server=url, token="t"))
        state = OperatorState(Settings(prometheus_url="http://127.0.0.1:9"), api, lambda: None, clock=lambda: T0)  # type: ignore[arg-type,return-value]
        try:
            await summary.refresh(state)
            await summary.refresh(state)
        finally:
            await api.close()
            await runner.cleanup()
        return state

    state = asyncio.run(scenario())
    warned = [r for r in caplog.records if "ClusterBottleneckSummary" in r.getMessage()]
    assert len(warned) == 1 and "crds/clusterbottlenecksummaries.bottleneck.dev.yaml" in warned[0].getMessage()
    assert "cluster-summary" in state.warned
    errors = [s for f in text_string_to_metric_families(state.metrics.render().decode())
              if f.name == "bottleneck_operator_errors" for s in f.samples if s.labels["kind"] == "kubernetes"]  # fmt: skip
    assert errors[0].value == 0  # a missing CRD is a set-up to fix, not an error on every pass
