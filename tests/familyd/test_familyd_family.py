"""The public entry point: determinism, balance, shape of the jobs, and bad arguments."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck
from bottleneck_operator_dev.familyd import FamilyDJob, generate_family_d
from bottleneck_operator_dev.familyd.family import labels, simulate_family_job

START = 1_760_000_000.0
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@pytest.fixture(scope="module")
def family() -> list[FamilyDJob]:
    return generate_family_d(5, 25, start=START)


def test_the_same_seed_gives_the_same_family(family: list[FamilyDJob]) -> None:
    again = generate_family_d(5, 25, start=START)
    assert all(same_job(a, b) for a, b in zip(family, again, strict=True))


def test_another_seed_gives_another_family(family: list[FamilyDJob]) -> None:
    other = generate_family_d(6, 25, start=START)
    assert sum(same_job(a, b) for a, b in zip(family, other, strict=True)) == 0


def test_each_job_comes_from_its_own_generator(family: list[FamilyDJob]) -> None:
    # job i is simulated from (seed, i) alone: drawing it on its own gives the same window
    order = labels(5, 25)
    for i in (0, 7, 24):
        alone = simulate_family_job(5, i, *order[i], start=START, step=30.0).window
        assert same_job(
            family[i],
            FamilyDJob(alone.namespace, alone.job, family[i].label, family[i].mechanism, family[i].tags, alone),
        )


def test_the_classes_come_in_equal_numbers_in_shuffled_order(family: list[FamilyDJob]) -> None:
    counts = Counter(j.label for j in family)
    assert set(counts) == set(CLASSES) and set(counts.values()) == {5}
    for n in (7, 23, 61):
        uneven = Counter(label for label, _ in labels(3, n))
        assert max(uneven.values()) - min(uneven.values()) <= 1 and sum(uneven.values()) == n
    order = [j.label for j in family]
    assert order != [CLASSES[i % 5] for i in range(25)]


def test_both_memory_mechanisms_in_equal_numbers() -> None:
    memory = [kind for label, kind in labels(2, 100) if label is Bottleneck.MEMORY]
    assert Counter(memory) == {"hbm": 10, "host": 10}
    jobs = generate_family_d(2, 20, start=START)
    kinds = Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert kinds == {"hbm-bandwidth": 2, "host-memory-pressure": 2}


def test_mechanisms_belong_to_their_class(family: list[FamilyDJob]) -> None:
    for job in family:
        assert job.mechanism in {m.value for m in MECHANISMS[job.label]}


def test_names_say_nothing_of_the_label_and_are_valid(family: list[FamilyDJob]) -> None:
    for job in family:
        assert DNS_LABEL.match(job.name) and DNS_LABEL.match(job.namespace)
        assert job.label.value.lower() not in job.name
        for pod in job.window.pods:
            assert DNS_LABEL.match(pod.pod) and pod.pod.startswith(job.name + "-")
    assert len({j.name for j in family}) == len(family)


def test_windows_start_where_asked_not_at_the_clock(family: list[FamilyDJob]) -> None:
    later = generate_family_d(5, 25, start=START + 86_400.0, step=30.0)
    for a, b in zip(family, later, strict=True):
        assert a.window.start == START and b.window.start == START + 86_400.0
        np.testing.assert_array_equal(b.window.timestamps - a.window.timestamps, 86_400.0)
        for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
            for k in pa.signals:
                np.testing.assert_array_equal(pa.signals[k], pb.signals[k])


def test_the_step_is_honoured() -> None:
    for job in generate_family_d(4, 5, start=START, step=60.0):
        w = job.window
        np.testing.assert_allclose(np.diff(w.timestamps), 60.0)
        assert w.step == 60.0 and w.end == w.timestamps[-1]


@pytest.mark.parametrize(("n", "step"), [(-1, 30.0), (5, 0.0), (5, -30.0)])
def test_bad_arguments_are_refused(n: int, step: float) -> None:
    with pytest.raises(ValueError, match="n >= 0 and step > 0"):
        generate_family_d(0, n, start=START, step=step)


def test_an_empty_family_is_empty() -> None:
    assert generate_family_d(0, 0, start=START) == []
