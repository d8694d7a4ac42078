"""Finding the training workloads' pods in a real Prometheus, as kube-state-metrics exports them.

PyTorchJob and MPIJob pods name their workload in ``kube_pod_info``'s ``created_by_*`` labels (the
MPI Operator's launcher pod names its launcher Job); JobSet pods name a child Job, which ``kube_job_owner`` links to the JobSet (a TrainJob runs as a
JobSet of its own name). The data are written relative to the time the test runs.
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
from bottleneck_operator.telemetry.windows import WindowRequest, fetch_windows

pytestmark = pytest.mark.prometheus

NOW = float(math.floor(time.time() / 60) * 60)
START = NOW - 1200
SCRAPE = 30

# (namespace, pod, created_by_kind, created_by_name)
PODS = [
    ("ml", "bert-master-0", "PyTorchJob", "bert"),
    ("ml", "bert-worker-0", "PyTorchJob", "bert"),
    ("ml", "hpl-launcher", "MPIJob", "hpl"),
    ("ml", "hpl-worker-0", "MPIJob", "hpl"),
    # The MPI Operator's MPIJob (v2beta1): workers owned by it, the launcher's pod by its launcher Job.
    ("ml", "nccl-launcher-7fx2q", "Job", "nccl-launcher"),
    ("ml", "nccl-worker-0", "MPIJob", "nccl"),
    ("ml", "nccl-worker-1", "MPIJob", "nccl"),
    ("ml", "llm-node-0-0-x7k2p", "Job", "llm-node-0"),
    ("ml", "llm-node-1-0-q9zzt", "Job", "llm-node-1"),
    ("ml", "ft-dataset-initializer-0-0-a1b2c", "Job", "ft-dataset-initializer-0"),
    ("ml", "ft-node-0-0-d3e4f", "Job", "ft-node-0"),
    ("ml", "plain-x1", "Job", "plain"),
    # A Job whose name starts like the JobSet's but that no JobSet owns: not the JobSet's.
    ("ml", "llm-extra-abcde", "Job", "llm-extra"),
    # A JobSet of the same name in another namespace: not requested.
    ("other", "llm-node-0-0-zzzzz", "Job", "llm-node-0"),
]
# (namespace, job_name, owner_kind, owner_name)
JOB_OWNERS = [
    ("ml", "llm-node-0", "JobSet", "llm"),
    ("ml", "llm-node-1", "JobSet", "llm"),
    ("ml", "ft-dataset-initializer-0", "JobSet", "ft"),
    ("ml", "ft-node-0", "JobSet", "ft"),
    ("ml", "nccl-launcher", "MPIJob", "nccl"),
    ("ml", "plain", "<none>", "<none>"),
    ("ml", "llm-extra", "<none>", "<none>"),
    ("other", "llm-node-0", "JobSet", "llm"),
]
REQUESTED = {("ml", "bert"), ("ml", "hpl"), ("ml", "nccl"), ("ml", "llm"), ("ml", "ft"), ("ml", "plain")}


def _openmetrics() -> str:
    out = ["# TYPE kube_pod_info gauge"]
    for t in range(int(START), int(NOW) + 1, SCRAPE):
        for ns, pod, kind, owner in PODS:
            labels = f'namespace="{ns}",pod="{pod}",node="n1",created_by_kind="{kind}",created_by_name="{owner}"'
            labels += ',job="kube-state-metrics"'
            out.append(f"kube_pod_info{{{labels}}} 1 {t}")
    out.append("# TYPE kube_job_owner gauge")
    for t in range(int(START), int(NOW) + 1, SCRAPE):
        for ns, job, kind, owner in JOB_OWNERS:
            labels = (
                f'namespace="{ns}",job_name="{job}",owner_kind="{kind}",owner_name="{owner}",owner_is_controller="true"'
                ',job="kube-state-metrics"'
            )
            out.append(f"kube_job_owner{{{labels}}} 1 {t}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def client(start_prometheus: Any) -> PrometheusClient:
    prom = start_prometheus(_openmetrics())
    return PrometheusClient(Settings(prometheus_url=prom.url, prometheus_retries=0))


def test_each_workloads_pods_are_found_through_its_owners(client: PrometheusClient) -> None:
    names = [j for _, j in sorted(REQUESTED)]
    query = pods_query(
        regex_alternation(ns for ns, _ in REQUESTED),
        regex_alternation(names),
        regex_alternation(names, suffix="-.+"),
        120.0,
    )
    grid = Grid.within(NOW - 600, NOW, 60.0)
    store = Store()
    found = discover(client.query_matrix(query, grid), REQUESTED, store)
    assert found == REQUESTED
    by_job = {job: sorted(store.pods[("ml", job)]) for _, job in REQUESTED}
    assert by_job == {
        "bert": ["bert-master-0", "bert-worker-0"],
        "hpl": ["hpl-launcher", "hpl-worker-0"],
        "nccl": ["nccl-launcher-7fx2q", "nccl-worker-0", "nccl-worker-1"],
        "llm": ["llm-node-0-0-x7k2p", "llm-node-1-0-q9zzt"],
        "ft": ["ft-dataset-initializer-0-0-a1b2c", "ft-node-0-0-d3e4f"],
        "plain": ["plain-x1"],
    }
    # Found through their owners, not guessed from the name prefix.
    assert not any(p.by_prefix for job in by_job for p in store.pods[("ml", job)].values())
    assert ("other", "llm") not in store.pods


def test_the_batched_fetch_gives_each_workload_its_pods(client: PrometheusClient) -> None:
    # The whole data path of a pass: discovery, then the signal queries narrowed to those pods.
    requests = [WindowRequest(ns, job, NOW - 600, NOW) for ns, job in sorted(REQUESTED)]
    windows = fetch_windows(client, requests, Settings(prometheus_url="http://unused").labels, step=60.0)
    pods = {job: sorted(p.pod for p in windows[("ml", job)].pods) for _, job in REQUESTED}
    assert pods["llm"] == ["llm-node-0-0-x7k2p", "llm-node-1-0-q9zzt"]
    assert pods["ft"] == ["ft-dataset-initializer-0-0-a1b2c", "ft-node-0-0-d3e4f"]
    assert pods["bert"] == ["bert-master-0", "bert-worker-0"]
    assert pods["hpl"] == ["hpl-launcher", "hpl-worker-0"]
    assert pods["nccl"] == ["nccl-launcher-7fx2q", "nccl-worker-0", "nccl-worker-1"]
