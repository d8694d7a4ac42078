"""Family M's entry point: determinism, class balance, and independence of the jobs' draws."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck
from bottleneck_operator_dev.familym import FamilyMJob, generate_family_m

START = 1_700_000_000.0  # the fixture's start, an explicit time


def test_same_seed_same_family(family_m: list[FamilyMJob]) -> None:
    again = generate_family_m(11, 60, start=START)
    assert all(same_job(a, b) for a, b in zip(family_m, again, strict=True))


def test_other_seed_other_family(family_m: list[FamilyMJob]) -> None:
    other = generate_family_m(12, 10, start=START)
    assert not all(same_job(a, b) for a, b in zip(family_m[:10], other, strict=True))


def test_classes_in_equal_numbers(family_m: list[FamilyMJob]) -> None:
    counts = Counter(j.label for j in family_m)
    assert counts == {cls: len(family_m) // len(CLASSES) for cls in CLASSES}


def test_order_is_shuffled(family_m: list[FamilyMJob]) -> None:
    labels = [j.label for j in family_m]
    assert labels != [CLASSES[i % len(CLASSES)] for i in range(len(labels))]
    assert labels != sorted(labels)


def test_both_memory_mechanisms_and_contract_spellings(family_m: list[FamilyMJob]) -> None:
    memory = {j.mechanism for j in family_m if j.label is Bottleneck.MEMORY}
    assert memory == {"host-memory-pressure", "hbm-bandwidth"}
    for job in family_m:
        assert job.mechanism in {m.value for m in MECHANISMS[job.label]}


def test_windows_start_where_asked() -> None:
    jobs = generate_family_m(3, 5, start=1234.0, step=15.0)
    for job in jobs:
        assert job.window.start == 1234.0
        assert job.window.step == 15.0
        assert job.window.timestamps[0] == 1234.0


def test_names_are_unique_and_dns_safe(family_m: list[FamilyMJob]) -> None:
    names = [j.name for j in family_m]
    assert len(set(names)) == len(names)
    for job in family_m:
        assert job.name == job.window.job and job.namespace == job.window.namespace
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", job.name)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step"):
        generate_family_m(1, 5, start=START, step=0.0)
    assert generate_family_m(1, 0, start=START) == []


def test_each_job_draws_from_its_own_generator(family_m: list[FamilyMJob]) -> None:
    from bottleneck_operator_dev.familym.family import _job, _targets

    cls, mechanism = _targets(11, 60)[7]
    alone = _job(11, 7, cls, mechanism, START, 30.0)
    assert same_job(alone, family_m[7])
