"""Suspects: the same GPU or node behind in Job after Job, beyond what chance allows."""

from __future__ import annotations

import math

import pytest

from bottleneck_operator.analysis.cluster import JobDigest, PeerSample, Straggler, find_suspects
from bottleneck_operator.analysis.cluster.suspects import _binomial_upper_tail


def _job(i: int, nodes: list[str]) -> JobDigest:
    peers = tuple(PeerSample(pod=f"j{i}-{k}", node=n, gpu="0", activity=0.9) for k, n in enumerate(nodes))
    return JobDigest(namespace="ml", name=f"j{i}", bottleneck="GPU", peers=peers)


def _straggler(i: int, node: str, cause: str, gpu: str | None = "0") -> Straggler:
    return Straggler("ml", f"j{i}", f"j{i}-0", node, gpu, cause, 0.3, ())


def test_a_gpu_behind_in_several_jobs_is_a_suspect_and_one_job_is_not() -> None:
    jobs = [_job(i, [f"n{(i + k) % 40}" for k in range(4)]) for i in range(200)]
    stragglers = [_straggler(i, "n7", "throttled-clock") for i in (4, 5, 6, 7)]  # the Jobs with a pod on n7
    stragglers += [_straggler(i, f"n{i % 40}", "throttled-clock") for i in (50, 91)]  # one Job each
    (suspect,) = find_suspects(jobs, stragglers)
    assert (suspect.node, suspect.gpu, suspect.cause, suspect.jobs) == ("n7", "0", "throttled-clock", 4)
    assert suspect.p_value < suspect.threshold and suspect.expected < 1
    assert suspect.message.startswith("GPU 0 on n7 is the throttled-clock straggler of 4 Jobs")


def test_network_and_storage_stragglers_point_at_the_node() -> None:
    jobs = [_job(i, [f"n{(i + k) % 40}" for k in range(4)]) for i in range(200)]
    stragglers = [_straggler(i, "n12", "network", gpu=None) for i in range(9, 13)]
    (suspect,) = find_suspects(jobs, stragglers)
    assert (suspect.node, suspect.gpu, suspect.cause) == ("n12", None, "network")
    # Starved stragglers name no cause, so they accuse nothing.
    assert find_suspects(jobs, [_straggler(i, "n12", "starved") for i in range(9, 13)]) == []


def test_the_binomial_tail() -> None:
    assert _binomial_upper_tail(0, 10, 0.1) == pytest.approx(1.0)
    assert _binomial_upper_tail(10, 10, 0.5) == pytest.approx(0.5**10)
    assert _binomial_upper_tail(2, 3, 0.2) == pytest.approx(3 * 0.2**2 * 0.8 + 0.2**3)
    assert _binomial_upper_tail(1, 5, 0.0) == 0.0 and math.isclose(_binomial_upper_tail(0, 5, 0.0), 1.0)
