"""The interface the evaluation bench calls: arguments, errors, determinism, balance."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familys import FamilySJob, generate_family_s
from bottleneck_operator_dev.familys.generate import class_of

from .conftest import START


def test_errors_say_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_s(1, -1, start=START)
    with pytest.raises(ValueError, match="step must be positive"):
        generate_family_s(1, 3, start=START, step=0.0)
    with pytest.raises(ValueError, match="step must be positive"):
        generate_family_s(1, 3, start=START, step=-30.0)
    assert generate_family_s(1, 0, start=START) == []


def test_deterministic_and_independent_of_n() -> None:
    a = generate_family_s(7, 6, start=START)
    b = generate_family_s(7, 6, start=START)
    c = generate_family_s(7, 3, start=START)
    assert all(same_job(x, y) for x, y in zip(a, b, strict=True))
    assert all(same_job(x, y) for x, y in zip(a[:3], c, strict=True))
    d = generate_family_s(8, 3, start=START)
    assert not all(same_job(x, y) for x, y in zip(c, d, strict=True))


def test_classes_balanced_and_shuffled() -> None:
    for n in (5, 23, 600):
        counts = Counter(class_of(1, i) for i in range(n))
        assert set(counts) <= set(CLASSES)
        assert max(counts.values()) - min(counts.get(c, 0) for c in CLASSES) <= 1
    order = [class_of(1, i) for i in range(50)]
    assert order != sorted(order) and order[:5] != order[5:10]


def test_labels_follow_the_assigned_classes(jobs: list[FamilySJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert all(counts[c] == 8 for c in CLASSES)
    assert all(j.label is class_of(3, i) for i, j in enumerate(jobs))


def test_job_fields_and_mechanisms(jobs: list[FamilySJob]) -> None:
    for j in jobs:
        assert dataclasses.is_dataclass(j)
        with pytest.raises(dataclasses.FrozenInstanceError):
            j.name = "x"  # type: ignore[misc]
        assert isinstance(j.window, JobWindow) and j.window.job == j.name and j.window.namespace == j.namespace
        assert j.label in CLASSES and j.label is not Bottleneck.UNKNOWN
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]
        assert all(isinstance(t, str) for t in j.tags)


def test_both_memory_mechanisms_occur(jobs: list[FamilySJob]) -> None:
    mechs = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert mechs == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}
