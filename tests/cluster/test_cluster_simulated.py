"""The cluster analysis on simulated clusters: each planted fault found where it is, healthy ones quiet.

Seeds here are neither the bench's (from 10,000) nor those the detector was developed on (below 100).
"""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.cluster import summarise
from bottleneck_operator_dev.simulation.cluster import PATTERNS, draw_cluster
from bottleneck_operator_dev.simulation.cluster_score import StragglerScore, findings, is_right

SEED = 5000


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_planted_fault_is_found_where_it_is(pattern: str) -> None:
    cluster = draw_cluster(SEED, pattern=pattern)
    found = findings(summarise(cluster.jobs))
    assert cluster.fault is not None
    assert [f for f in found if is_right(f, cluster.fault)], (cluster.fault, found)
    assert all(is_right(f, cluster.fault) for f in found), found


def test_a_healthy_cluster_whose_jobs_differ_widely_raises_no_alarm() -> None:
    cluster = draw_cluster(SEED + 1)
    summary = summarise(cluster.jobs)
    # The workloads differ: some nodes see far more IO-bound Jobs than others, for their workloads' sake.
    io_share = {}
    for j in cluster.jobs:
        for node in j.locations["node"]:
            seen, io = io_share.get(node, (0, 0))
            io_share[node] = (seen + 1, io + (j.bottleneck == "IO"))
    shares = [io / seen for seen, io in io_share.values() if seen >= 5]
    assert max(shares) - min(shares) > 0.4
    assert findings(summary) == []


def test_stragglers_on_a_cluster_with_a_slow_node() -> None:
    score = StragglerScore()
    score.add(draw_cluster(SEED + 2, pattern="slow-node-storage"))
    assert score.planted >= 3 and score.right / score.planted >= 0.9
    assert score.clean / score.healthy >= 0.95


def test_an_unknown_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown pattern"):
        draw_cluster(1, pattern="bad-cable")
