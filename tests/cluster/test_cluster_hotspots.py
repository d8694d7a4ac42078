"""Hot spots: a stratified exact test that a node running heavier Jobs does not fool."""

from __future__ import annotations

import math

import pytest

from bottleneck_operator.analysis.cluster import JobDigest, find_hotspots
from bottleneck_operator.analysis.cluster.hotspots import _exact_upper_tail


def _jobs(spec: list[tuple[str, str, str, int]]) -> list[JobDigest]:
    """(workload, node, class, count) -> that many Jobs."""
    out = []
    for workload, node, cls, count in spec:
        for _ in range(count):
            out.append(
                JobDigest(
                    namespace="ml",
                    name=f"{workload}-{node}-{len(out)}",
                    bottleneck=cls,
                    workload=workload,
                    locations={"node": (node,)},
                )
            )
    return out


def _nodes(workload: str, cls: str, nodes: range, each: int) -> list[tuple[str, str, str, int]]:
    return [(workload, f"n{i}", cls, each) for i in nodes]


def test_a_node_that_runs_the_io_heavy_workload_is_not_a_hot_spot() -> None:
    # n0 runs most of the loader-heavy workload, which is IO-bound half the time everywhere.
    spec = [
        ("loader", "n0", "IO", 12),
        ("loader", "n0", "GPU", 12),
        *_nodes("loader", "IO", range(1, 4), 1),
        *_nodes("loader", "GPU", range(1, 4), 1),
        *_nodes("llm", "GPU", range(0, 20), 3),
    ]
    jobs = _jobs(spec)
    assert find_hotspots(jobs) == []
    # Pooled into one stratum the same Jobs make n0 look hot: the strata are what protect it.
    pooled = [JobDigest(**{**j.__dict__, "workload": ""}) for j in jobs]
    assert [(h.location, h.symptom) for h in find_hotspots(pooled)] == [("n0", "IO")]


def test_a_node_whose_jobs_are_io_bound_beyond_their_workload_is_one() -> None:
    spec = [
        ("loader", "n7", "IO", 9),
        ("loader", "n7", "GPU", 1),
        *_nodes("loader", "IO", range(0, 7), 1),
        *_nodes("loader", "GPU", range(0, 7), 6),
        *_nodes("llm", "GPU", range(0, 12), 4),
    ]
    (spot,) = find_hotspots(_jobs(spec))
    assert (spot.dimension, spot.location, spot.symptom, spot.jobs, spot.exposed) == ("node", "n7", "IO", 9, 14)
    assert spot.expected < 4 and spot.p_value < spot.threshold
    assert "node n7 is the common factor of 9 IO-bound Jobs" in spot.message
    assert len(spot.examples) == 5


def test_explained_jobs_do_not_make_a_second_hot_spot() -> None:
    # Every Job on n3 is on rack r0 too: once n3 explains them, the rack has nothing left.
    jobs = []
    for i, j in enumerate(_jobs([("w", "n3", "Interconnect", 8), *_nodes("w", "GPU", range(4, 30), 2)])):
        rack = "r0" if j.locations["node"][0] in ("n3", "n4", "n5") else "r1"
        jobs.append(JobDigest(**{**j.__dict__, "name": f"j{i}", "locations": {**j.locations, "rack": (rack,)}}))
    found = find_hotspots(jobs)
    assert [(h.dimension, h.location) for h in found] == [("node", "n3")]


def test_the_exact_tail_is_the_hypergeometric_one() -> None:
    fact = [0.0]
    for k in range(1, 21):
        fact.append(fact[-1] + math.log(k))
    import numpy as np

    log_fact = np.array(fact)
    # One stratum of 10 Jobs, 3 symptomatic, 3 ran there, all 3 symptomatic: 1 / C(10, 3).
    p = _exact_upper_tail(np.array([10]), np.array([3]), np.array([3]), 3, log_fact)
    assert p == pytest.approx(1 / 120)
    # Two strata: the law of the sum is the convolution of the two.
    p = _exact_upper_tail(np.array([10, 10]), np.array([3, 3]), np.array([3, 3]), 6, log_fact)
    assert p == pytest.approx((1 / 120) ** 2)
    assert _exact_upper_tail(np.array([10]), np.array([3]), np.array([3]), 0, log_fact) == pytest.approx(1.0)


def test_too_few_jobs_are_never_a_hot_spot() -> None:
    jobs = _jobs([("w", "n1", "IO", 2), *_nodes("w", "GPU", range(2, 40), 2)])
    assert find_hotspots(jobs) == []
