"""Family H as a whole: deterministic per seed, balanced, every window on its grid."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator_dev.familyh import FamilyHJob, generate_family_h

from .conftest import START


def _fingerprint(job: FamilyHJob) -> tuple[object, ...]:
    arrays = [(p.pod, p.node, name, p.signals[name].tobytes()) for p in job.window.pods for name in p.signals]
    return job.namespace, job.name, job.label, job.mechanism, job.tags, job.window.timestamps.tobytes(), arrays


def test_the_same_seed_gives_the_same_jobs() -> None:
    first = generate_family_h(5, 12, start=START)
    again = generate_family_h(5, 12, start=START)
    assert [_fingerprint(j) for j in first] == [_fingerprint(j) for j in again]


def test_another_seed_gives_other_jobs() -> None:
    one = generate_family_h(5, 10, start=START)
    other = generate_family_h(6, 10, start=START)
    assert [_fingerprint(j) for j in one] != [_fingerprint(j) for j in other]


def test_classes_come_in_equal_numbers_in_shuffled_order(family: list[FamilyHJob]) -> None:
    counts = collections.Counter(j.label for j in family)
    assert counts == {cls: len(family) // 5 for cls in CLASSES}
    labels = [j.label for j in family]
    # shuffled: not the classes in a fixed cycle
    assert labels != [CLASSES[k % 5] for k in range(len(family))]


def test_counts_differ_by_at_most_one_when_n_is_not_a_multiple_of_five() -> None:
    counts = collections.Counter(j.label for j in generate_family_h(3, 7, start=START))
    assert sum(counts.values()) == 7
    assert max(counts.values()) - min(counts.get(c, 0) for c in CLASSES) <= 1


def test_mechanisms_belong_to_their_class_and_memory_has_both(family: list[FamilyHJob]) -> None:
    for job in family:
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]
    memory = {j.mechanism for j in family if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HBM_BANDWIDTH.value, Mechanism.HOST_MEMORY_PRESSURE.value}


def test_windows_start_where_asked_on_the_step_grid() -> None:
    for job in generate_family_h(9, 10, start=START + 17.0, step=15.0):
        w = job.window
        assert w.start == START + 17.0 == w.timestamps[0]
        assert w.end == w.timestamps[-1]
        assert 20 <= w.timestamps.size <= 120
        np.testing.assert_allclose(np.diff(w.timestamps), 15.0)
        assert w.step == 15.0


def test_sizes_are_in_range(family: list[FamilyHJob]) -> None:
    for job in family:
        assert 1 <= len(job.window.pods) <= 16
        for pod in job.window.pods:
            assert pod.gpu_count == 0 or 1 <= pod.gpu_count <= 8
            assert (pod.gpu_count == 0) == (pod.gpu_model is None)


def test_names_do_not_give_the_label_away(family: list[FamilyHJob]) -> None:
    words = {c.value.lower() for c in CLASSES} | {"mem", "hbm", "gpu-bound", "io-bound"}
    for job in family:
        names = [job.name, *(p.pod for p in job.window.pods)]
        assert not any(word in name.lower() for name in names for word in words)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_h(1, -1, start=START)
    with pytest.raises(ValueError, match="step must be"):
        generate_family_h(1, 3, start=START, step=0.0)
    assert generate_family_h(1, 0, start=START) == []
