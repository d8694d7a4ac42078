"""Scenario generation: determinism, balanced classes, labels with margins, holdout split, tags."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.errors import UsageError
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs, in_holdout
from bottleneck_operator_dev.simulation.stages import AMBIGUOUS_MARGIN, label_of

START = 1_700_000_000.0


def test_same_seed_same_jobs_and_state() -> None:
    a = generate_jobs(5, 4, start=START, duration=600)
    b = generate_jobs(5, 4, start=START, duration=600)
    assert [j.name for j in a] == [j.name for j in b]
    assert [j.params for j in a] == [j.params for j in b]
    for ja, jb in zip(a, b, strict=True):
        np.testing.assert_array_equal(ja.state.gpu["gpu_util"], jb.state.gpu["gpu_util"])
        np.testing.assert_array_equal(ja.state.node["cpu_c"], jb.state.node["cpu_c"])


def test_other_seed_other_jobs() -> None:
    a = generate_jobs(5, 4, start=START, duration=600)
    c = generate_jobs(6, 4, start=START, duration=600)
    assert {j.name for j in a}.isdisjoint({j.name for j in c})


def test_classes_balanced_and_labels_clear(many_jobs: list[SimulatedJob]) -> None:
    counts = Counter(j.label for j in many_jobs)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) <= 2
    for job in many_jobs:
        label, margin, _ = label_of(job.params.times)
        assert label == job.label
        assert margin == pytest.approx(job.margin)
        assert not job.ambiguous
        assert job.margin >= AMBIGUOUS_MARGIN
        assert job.params.target == job.label.value


def test_requested_classes_only() -> None:
    jobs = generate_jobs(9, 6, start=START, duration=600, classes=[Bottleneck.IO, Bottleneck.CPU])
    assert Counter(j.label for j in jobs) == {Bottleneck.IO: 3, Bottleneck.CPU: 3}


def test_ambiguous_jobs_are_near_ties() -> None:
    jobs = generate_jobs(3, 40, start=START, duration=600, include_ambiguous=True)
    ambiguous = [j for j in jobs if j.ambiguous]
    assert ambiguous, "about a fifth of the jobs should be near-ties"
    assert all(j.margin < AMBIGUOUS_MARGIN for j in ambiguous)
    assert all(j.margin >= AMBIGUOUS_MARGIN for j in jobs if not j.ambiguous)


def test_holdout_combos_disjoint(many_jobs: list[SimulatedJob]) -> None:
    held = generate_jobs(123, 30, start=START, duration=600, holdout=True)
    combo = lambda j: (j.params.gpu, j.params.storage, j.params.nic_gbps)  # noqa: E731
    train = {combo(j) for j in many_jobs}
    test = {combo(j) for j in held}
    assert train.isdisjoint(test)
    assert all(in_holdout(*c) for c in test)
    assert not any(in_holdout(*c) for c in train)
    assert {j.params.seed for j in held}.isdisjoint({j.params.seed for j in many_jobs})


def test_unique_names_and_pods(many_jobs: list[SimulatedJob]) -> None:
    names = [j.name for j in many_jobs]
    pods = [p.pod for j in many_jobs for p in j.pods]
    nodes = [n.name for j in many_jobs for n in j.nodes]
    assert len(set(names)) == len(names)
    assert len(set(pods)) == len(pods)
    assert len(set(nodes)) == len(nodes)
    for job in many_jobs:
        assert all(p.pod.startswith(job.name + "-") for p in job.pods)
        assert len(job.pods) == job.params.n_pods
        assert {p.node for p in job.pods} == {n.name for n in job.nodes}


def test_variety(many_jobs: list[SimulatedJob]) -> None:
    seen = lambda f: {f(j) for j in many_jobs}  # noqa: E731
    assert len(seen(lambda j: j.params.gpu)) >= 5
    assert len(seen(lambda j: j.params.storage)) >= 4
    assert seen(lambda j: j.params.dcgm_fieldset) == {"dev", "shipped", "full"}
    assert seen(lambda j: j.params.scrape_interval) <= {15.0, 30.0, 60.0}
    assert len(seen(lambda j: j.params.scrape_interval)) >= 2
    tags = Counter(t for j in many_jobs for t in j.tags)
    for tag in ("noisy_neighbour", "cpu_throttled", "network_storage", "multi_node", "no_prof", "sidecar"):
        assert tags[tag] > 0, tag


def test_forced_options() -> None:
    jobs = generate_jobs(1, 3, start=START, duration=600, scrape_interval=60, dcgm_fieldset="full", namespace="x")
    assert all(j.params.scrape_interval == 60 and j.params.dcgm_fieldset == "full" for j in jobs)
    assert all(j.namespace == "x" for j in jobs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dcgm_fieldset": "nope"}, "field set"),
        ({"classes": [Bottleneck.UNKNOWN]}, "classes"),
        ({"duration": 10.0}, "duration"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args = {"start": START, "duration": 600.0, **kwargs}
    with pytest.raises(UsageError, match=message):
        generate_jobs(1, 2, **args)  # type: ignore[arg-type]
