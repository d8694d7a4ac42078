"""The operator writes the ClusterBottleneckSummary from its own passes: real pipeline, real Prometheus.

The Jobs replay simulated runs backfilled into Prometheus (the operator's clock set to their time);
the summary must count every analysed Job under the class its report shows and charge idle GPU time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for

from bottleneck_operator_dev.demo.cluster import JOBS, SUMMARIES, LocalCluster, job_body

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def _summary(cluster: LocalCluster) -> dict[str, Any]:
    got = cluster.get(SUMMARIES, None, "cluster")
    return dict((got or {}).get("status") or {})


def _counted(status: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in (status.get("byClass") or {}).items() if v}


def _complete(status: dict[str, Any], expected: dict[str, int], jobs: int) -> dict[str, Any] | None:
    """The status once it counts every Job under its report's class, else None."""
    return status if _counted(status) == expected and status.get("jobs") == jobs else None


def test_each_pass_refreshes_the_summary(cluster: LocalCluster, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs[:6]
    end = max(j.end for j in jobs) - 5
    settings = fast_settings(sim_dataset.prom.url, window=900.0)
    for j in jobs:
        cluster.create(JOBS, j.namespace, job_body(j.namespace, j.name, start=j.start))

    def classes() -> Counter[str]:
        return Counter((r.get("status") or {}).get("bottleneck") for r in reports(cluster).values())

    with run_operator(settings, clock=lambda: end):
        wait_for("a verdict on every Job", lambda: None not in classes() and sum(classes().values()) == len(jobs), 60)
        # The status the test reads is the one that matched, taken while the operator still runs; the
        # classes it must count are read again beside it, since a later pass may rewrite a report (the
        # summary counts each Job's latest digest, not the first verdict seen).
        last: list[tuple[dict[str, Any], dict[str, int]]] = [({}, {})]

        def complete() -> dict[str, Any] | None:
            expected = {k: v for k, v in classes().items() if k is not None}
            last[0] = (_summary(cluster), expected)
            return _complete(last[0][0], expected, len(jobs))

        try:
            status = wait_for("the summary of every Job", complete, 30)
        except pytest.fail.Exception:  # say what the summary held instead
            summary, expected = last[0]
            pytest.fail(f"the summary never counted {expected} over {len(jobs)} Jobs; last: {summary}")
    assert status["jobs"] == len(jobs)
    assert status["gpuHours"] > 0 and 0 <= status["gpuHoursLost"] <= status["gpuHours"]
    assert set(status["lostByClass"]) == {"IO", "CPU", "Interconnect", "GPU", "Memory", "Unknown"}
    assert status["byClass"]["Unknown"] == 0
    assert status["hotSpots"] == [] and status["suspects"] == []  # six Jobs: nothing to accuse
    assert {x["namespace"] for x in status["lostByNamespace"]} <= {j.namespace for j in jobs}
