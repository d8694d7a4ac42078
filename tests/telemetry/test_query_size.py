"""Every query a pass sends stays compact, whatever the Job's size, on a real Prometheus.

The data (written here, backfilled with promtool): one Job of 64 pods over 16 nodes, with long,
realistic pod names (``<job>-<index>-<5 random>``), plus 40 one-pod Jobs beside it, 10 minutes at a
30 s scrape interval: kube_pod_info, dcgm-exporter, cAdvisor, the collector and node-exporter (no
node label: node_uname_info joins). A small subclass of the real client records each query it
sends; every answer comes from Prometheus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry.plan.selectors import pack, query_bytes

pytestmark = pytest.mark.prometheus

T0 = 1767225600
MINUTES = 10
NS = "research-large-models"
BIG = "llama-pretrain-70b-run-0042"
PODS = 64
NODES = 16
SMALL = 40
# A Deployment's pod whose name the big Job's prefix also matches: read, never assigned to the Job.
FOREIGN = f"{BIG}-tensorboard-7c9d8-xk2lp"
# Listing the big Job's 64 pod names once takes over 2.5 KB, and the scrape-interval probe uses
# the pod selector a dozen times per exporter (over 40 KB in all). Selected by the Job's prefix,
# what is left is the 16 node names (the node probe, about 11.3 KB with every exporter's probe in
# one request): under the default 12000-byte limit without cutting anything, whatever the pods.
BOUND = 12_000


class RecordingClient(PrometheusClient):
    """The real client, keeping every PromQL expression it sends."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.sent: list[str] = []

    def _call(self, endpoint: str, params: dict[str, str], decode: Any) -> Any:
        self.sent.append(params["query"])
        return super()._call(endpoint, params, decode)


# The scrape job of each family's series, as kube-prometheus-stack names them.
SCRAPE_JOBS = {
    "kube_": "kube-state-metrics",
    "DCGM_": "dcgm-exporter",
    "container_": "kubelet",
    "node_": "node-exporter",
}


def _suffix(i: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphabet[(i * 7 + k * 13) % len(alphabet)] for k in range(5))


def _pods() -> list[tuple[str, str, str]]:
    """(job, pod, node) of every pod."""
    big = [(BIG, f"{BIG}-{i}-{_suffix(i)}", f"gpu-a100-node-{i % NODES:02d}") for i in range(PODS)]
    small = [
        (f"sweep-{k:02d}", f"sweep-{k:02d}-0-{_suffix(100 + k)}", f"gpu-a100-node-{k % NODES:02d}")
        for k in range(SMALL)
    ]
    return big + small


def _openmetrics() -> str:
    lines: list[str] = []
    times = [T0 + 30 * k for k in range(MINUTES * 2 + 1)]

    def family(kind: str, name: str, series: list[tuple[str, float]]) -> None:
        lines.append(f"# TYPE {name} {kind}")
        job = next(j for prefix, j in SCRAPE_JOBS.items() if name.startswith(prefix))
        for labels, slope in series:
            labels = f'{labels},job="{job}"'
            for t in times:
                value = 1.0 if kind == "gauge" and slope == 0 else slope * (t - T0 + 30)
                lines.append(f"{name}{{{labels}}} {value:g} {t}")

    pods = _pods()
    family("gauge", "kube_pod_info", [
        (f'namespace="{NS}",pod="{pod}",node="{node}",created_by_kind="Job",created_by_name="{job}"', 0)
        for job, pod, node in pods
    ] + [
        (f'namespace="{NS}",pod="{FOREIGN}",node="gpu-a100-node-00",created_by_kind="ReplicaSet",created_by_name="x"', 0)
    ])  # fmt: skip
    pods = [*pods, ("", FOREIGN, "gpu-a100-node-00")]
    family("gauge", "DCGM_FI_DEV_FB_USED", [
        (f'namespace="{NS}",pod="{pod}",Hostname="{node}",gpu="0",UUID="GPU-{i}",modelName="NVIDIA A100-SXM4-80GB"', 0)
        for i, (_, pod, node) in enumerate(pods)
    ])  # fmt: skip
    family("counter", "container_cpu_usage_seconds_total", [
        (f'namespace="{NS}",pod="{pod}",container="trainer"', 2.0 + i % 3) for i, (_, pod, _) in enumerate(pods)
    ])  # fmt: skip
    nodes = sorted({node for _, _, node in pods})
    family(
        "gauge", "node_uname_info", [(f'nodename="{n}",instance="10.0.0.{k + 1}:9100"', 0) for k, n in enumerate(nodes)]
    )
    family("counter", "node_cpu_seconds_total", [
        (f'instance="10.0.0.{k + 1}:9100",cpu="0",mode="{mode}"', 0.5) for k, _ in enumerate(nodes) for mode in ("idle", "user")
    ])  # fmt: skip
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def prom(start_prometheus: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("querysize")) / "data.om"
    path.write_text(_openmetrics())
    return start_prometheus(path)


def _requests(jobs: list[str]) -> list[WindowRequest]:
    return [WindowRequest(NS, job, float(T0 + 60), float(T0 + MINUTES * 60)) for job in jobs]


def _pass(prom: Any, jobs: list[str], **overrides: Any) -> tuple[RecordingClient, dict[Any, Any]]:
    settings = Settings(prometheus_url=prom.url, prometheus_retries=0, **overrides)
    client = RecordingClient(settings)
    try:
        return client, fetch_windows(
            client,
            _requests(jobs),
            settings.labels,
            step=settings.analysis.step,
            max_query_bytes=settings.prometheus.max_query_bytes,
        )
    finally:
        client.close()


def test_largest_query_of_a_64_pod_16_node_job_is_bounded(prom: Any) -> None:
    client, windows = _pass(prom, [BIG])
    window = windows[(NS, BIG)]
    assert len(window.pods) == PODS
    assert len({p.node for p in window.pods}) == NODES
    assert all(p.gpu_count == 1 for p in window.pods)
    cpu = window.pods[0].signals["cpu_cores"]
    assert np.nanmedian(cpu[len(cpu) // 2 :]) == pytest.approx(2.0, rel=0.05)
    largest = max(client.sent, key=query_bytes)
    assert query_bytes(largest) <= BOUND, f"{query_bytes(largest)} bytes: {largest[:300]}..."
    # No pod is named in any query: the Job's pods are selected by its prefix.
    pods = [p.pod for p in window.pods]
    assert not any(pod in q for q in client.sent for pod in [*pods, FOREIGN])
    assert FOREIGN not in pods


def test_query_count_does_not_grow_with_pods(prom: Any) -> None:
    """The 64-pod Job costs the same number of queries as a one-pod Job, and no request is cut."""
    # At VictoriaMetrics' limit: the 64-pod Job's 16 nodes, not its pods, lengthen its node probes.
    big, _ = _pass(prom, [BIG], max_query_bytes=16384)
    unlimited, _ = _pass(prom, [BIG], max_query_bytes=1_000_000)
    small, windows = _pass(prom, ["sweep-00"], max_query_bytes=16384)
    assert len(windows[(NS, "sweep-00")].pods) == 1
    assert len(big.sent) == len(small.sent) == len(unlimited.sent)


def test_a_pass_splits_its_queries_to_stay_under_the_configured_size(prom: Any) -> None:
    jobs = [BIG, *(f"sweep-{k:02d}" for k in range(SMALL))]
    wide, expected = _pass(prom, jobs)
    limit = 3500  # above the one request never cut (the label-layout probe), far below the others
    narrow, got = _pass(prom, jobs, max_query_bytes=limit)
    assert max(query_bytes(q) for q in wide.sent) > limit  # the default limit did not need to cut
    assert max(query_bytes(q) for q in narrow.sent) <= limit
    assert len(narrow.sent) > len(wide.sent)
    # Cut or not, the pass reads the same telemetry.
    assert set(got) == set(expected)
    for key, window in expected.items():
        other = got[key]
        assert [p.pod for p in other.pods] == [p.pod for p in window.pods]
        for mine, theirs in zip(window.pods, other.pods, strict=True):
            assert (mine.node, mine.gpu_count) == (theirs.node, theirs.gpu_count)
            assert set(mine.signals) == set(theirs.signals)
            for name, values in mine.signals.items():
                np.testing.assert_allclose(theirs.signals[name], values, equal_nan=True)


def test_pack_joins_parts_under_the_limit() -> None:
    parts = ["a" * 40, "b" * 40, "c" * 40, "d" * 200]
    requests = pack(parts, 100)
    assert requests == [f"{'a' * 40} or {'b' * 40}", "c" * 40, "d" * 200]
    assert pack([], 100) == []
