"""The operator places the Jobs it analyses, end to end: kopf's watch hands it each Job's claims, its
pass reads them and the Jobs' nodes from the API (kmock's emulator), the Jobs' telemetry from a real
Prometheus."""

from __future__ import annotations

import time
from typing import Any

import pytest
from operator_harness import fast_settings, run_operator, wait_for

from bottleneck_operator_dev.demo.cluster import CLAIMS, JOBS, NODES, SUMMARIES, LocalCluster, job_body

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

FABRIC = "example.com/fabric"


def test_the_operator_reads_the_claims_and_nodes_of_the_jobs_it_analyses(
    cluster: LocalCluster, sim_dataset: Any
) -> None:
    jobs = sim_dataset.jobs[:3]
    end = max(j.end for j in jobs) - 5
    settings = fast_settings(sim_dataset.prom.url, window=900.0, fabric_node_labels=[FABRIC], rack_node_labels=[])
    nodes = sorted({n.name for j in jobs for n in j.nodes})
    for node in nodes:
        cluster.create(
            NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {FABRIC: "a"}}}
        )
    for j in jobs:
        claim = f"{j.name}-data"
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim}}
        cluster.create(CLAIMS, j.namespace, {**pvc, "spec": {"storageClassName": "nfs-shared"}})
        body = job_body(j.namespace, j.name, start=j.start)
        body["spec"]["template"]["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        cluster.create(JOBS, j.namespace, body)
    assert cluster.emulator is not None
    reads = cluster.emulator.reads

    def summarised() -> int:
        got = cluster.get(SUMMARIES, None, "cluster")
        return int(((got or {}).get("status") or {}).get("jobs") or 0)

    with run_operator(settings, clock=lambda: end):
        wait_for("the summary of every Job", lambda: summarised() == len(jobs), 90)
        time.sleep(3 * settings.analysis.interval)  # more passes: their summaries are placed from the cache
    claims: dict[Any, int] = {k: v for k, v in reads.items() if k[0] == "persistentvolumeclaims"}
    assert claims == {("persistentvolumeclaims", j.namespace, f"{j.name}-data"): 1 for j in jobs}  # cached after
    assert {k[2]: v for k, v in reads.items() if k[0] == "nodes"} == dict.fromkeys(nodes, 1)
