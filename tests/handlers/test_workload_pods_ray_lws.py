"""RayJob and LeaderWorkerSet pods found in a real Prometheus, as kube-state-metrics exports them.

Neither kind is linked back by kube-state-metrics: a RayJob's pods name its RayCluster
(``<rayjob>-<5 chars>``, ``<rayjob>-raycluster-<5 chars>`` before KubeRay 1.1) and a
LeaderWorkerSet's pods its StatefulSets (``<lws>``, ``<lws>-<group>``). Owners of the right kind but
another shape (a StatefulSet ``<lws>-db``) stay out. The data are written relative to the time the
test runs.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient
from bottleneck_operator.telemetry.fetch.store import Store, discover
from bottleneck_operator.telemetry.plan.discovery import pods_query
from bottleneck_operator.telemetry.plan.grid import Grid
from bottleneck_operator.telemetry.plan.names import regex_alternation

pytestmark = pytest.mark.prometheus

NOW = float(math.floor(time.time() / 60) * 60)
START = NOW - 1200
SCRAPE = 30

# (namespace, pod, created_by_kind, created_by_name)
PODS = [
    ("ml", "rl-x7k2p-head", "RayCluster", "rl-x7k2p"),
    ("ml", "rl-x7k2p-gpu-worker-ab12c", "RayCluster", "rl-x7k2p"),
    ("ml", "rl-q2w3e", "Job", "rl"),  # the RayJob's submitter Job
    ("ml", "old-raycluster-z9y8x-head-1a2b3", "RayCluster", "old-raycluster-z9y8x"),
    ("ml", "serve-0", "StatefulSet", "serve"),
    ("ml", "serve-1", "StatefulSet", "serve"),
    ("ml", "serve-0-1", "StatefulSet", "serve-0"),
    ("ml", "serve-1-1", "StatefulSet", "serve-1"),
    # Same prefix, other owners: a database StatefulSet and a hand-made RayCluster.
    ("ml", "serve-db-0", "StatefulSet", "serve-db"),
    ("ml", "rl-dev-cluster-head-xxxxx", "RayCluster", "rl-dev-cluster"),
    # The same LeaderWorkerSet name in a namespace not requested.
    ("other", "serve-0", "StatefulSet", "serve"),
]
REQUESTED = {("ml", "rl"), ("ml", "old"), ("ml", "serve")}


def _openmetrics() -> str:
    out = ["# TYPE kube_pod_info gauge"]
    for t in range(int(START), int(NOW) + 1, SCRAPE):
        for ns, pod, kind, owner in PODS:
            labels = f'namespace="{ns}",pod="{pod}",node="n1",created_by_kind="{kind}",created_by_name="{owner}"'
            out.append(f"kube_pod_info{{{labels}}} 1 {t}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def client(start_prometheus: Any) -> PrometheusClient:
    prom = start_prometheus(_openmetrics())
    return PrometheusClient(Settings(prometheus_url=prom.url, prometheus_retries=0))


def test_ray_and_lws_pods_are_found_through_their_owners_names(client: PrometheusClient) -> None:
    names = [j for _, j in sorted(REQUESTED)]
    query = pods_query(
        regex_alternation(ns for ns, _ in REQUESTED),
        regex_alternation(names),
        regex_alternation(names, suffix="-.+"),
        120.0,
    )
    store = Store()
    found = discover(client.query_matrix(query, Grid.within(NOW - 600, NOW, 60.0)), REQUESTED, store)
    assert found == REQUESTED
    assert sorted(store.pods[("ml", "rl")]) == ["rl-q2w3e", "rl-x7k2p-gpu-worker-ab12c", "rl-x7k2p-head"]
    assert sorted(store.pods[("ml", "old")]) == ["old-raycluster-z9y8x-head-1a2b3"]
    assert sorted(store.pods[("ml", "serve")]) == ["serve-0", "serve-0-1", "serve-1", "serve-1-1"]
    assert ("other", "serve") not in store.pods
