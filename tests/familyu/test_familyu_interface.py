"""Family U's interface: determinism, errors, class balance, the window's grid and quality."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyu import FamilyUJob, generate_family_u
from bottleneck_operator_dev.familyu.generate import job_class

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyUJob]:
    return generate_family_u(seed=11, n=30, start=START)


def test_same_seed_gives_the_same_jobs_and_another_seed_does_not() -> None:
    a = generate_family_u(seed=3, n=6, start=START)
    b = generate_family_u(seed=3, n=6, start=START)
    c = generate_family_u(seed=4, n=6, start=START)
    assert all(same_job(x, y) for x, y in zip(a, b, strict=True))
    assert not all(same_job(x, y) for x, y in zip(a, c, strict=True))


def test_a_job_does_not_depend_on_n() -> None:
    short = generate_family_u(seed=5, n=3, start=START)
    longer = generate_family_u(seed=5, n=8, start=START)
    assert all(same_job(x, y) for x, y in zip(short, longer[:3], strict=True))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [({"n": -1}, "n must be >= 0"), ({"n": 2, "step": 0.0}, "step must be > 0"), ({"n": 2, "step": -5.0}, "step")],
)
def test_bad_arguments_raise_value_error_saying_what(kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        generate_family_u(1, start=START, **kwargs)  # type: ignore[arg-type]


def test_zero_jobs_is_an_empty_list() -> None:
    assert generate_family_u(1, 0, start=START) == []


def test_classes_come_in_equal_numbers_and_shuffled() -> None:
    for n in (600, 23):
        counts = collections.Counter(job_class(1, i) for i in range(n))
        assert set(counts) == set(CLASSES)
        assert max(counts.values()) - min(counts.values()) <= 1
    order = [job_class(1, i) for i in range(50)]
    assert order != [CLASSES[i % 5] for i in range(50)]  # not a fixed cycle
    assert order != [job_class(2, i) for i in range(50)]  # the shuffle follows the seed


def test_labels_are_the_balanced_classes_with_their_mechanisms(jobs: list[FamilyUJob]) -> None:
    for i, job in enumerate(jobs):
        assert job.label is job_class(11, i)
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]
        assert job.window.job == job.name and job.window.namespace == job.namespace


def test_both_memory_mechanisms_occur(jobs: list[FamilyUJob]) -> None:
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}


def test_windows_sit_on_the_step_grid_from_start() -> None:
    for step in (30.0, 15.0):
        for job in generate_family_u(seed=2, n=3, start=START, step=step):
            w = job.window
            t = w.timestamps
            assert w.start == START == t[0] and w.end == t[-1] and w.step == step
            assert np.allclose(np.diff(t), step)
            for pod in w.pods:
                assert pod.gpu_count >= 1 and pod.node and pod.gpu_model
                for name, values in pod.signals.items():
                    assert name in SIGNALS
                    assert values.shape == t.shape and values.dtype == np.float64


def test_quality_is_filled_with_the_contract_helpers(jobs: list[FamilyUJob]) -> None:
    for job in jobs:
        q = job.window.quality
        families, coverage = families_and_coverage(job.window.pods)
        assert q.families == families and q.coverage == pytest.approx(coverage)
        assert q.scrape_interval is not None and 10.0 <= q.scrape_interval <= 60.0
        assert coverage > 0.5


def test_a_draw_whose_pushes_never_bind_is_drawn_again() -> None:
    # seed 21's job 12 (a network-bound target) once exhausted its pushes and raised; it must now come
    # out labelled as the class its block asks for
    jobs = generate_family_u(seed=21, n=13, start=START)
    assert jobs[12].label is job_class(21, 12) is Bottleneck.INTERCONNECT
