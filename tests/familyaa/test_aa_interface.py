"""The interface the bench calls: determinism, errors, balance, grid, contract names and units."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow, families_and_coverage
from bottleneck_operator_dev.familyaa import FamilyAAJob, generate_family_aa
from bottleneck_operator_dev.familyaa.hardware import GPUS

START = 1_700_000_000.0


def _same(a: FamilyAAJob, b: FamilyAAJob) -> bool:
    if (a.name, a.label, a.mechanism, a.tags) != (b.name, b.label, b.mechanism, b.tags):
        return False
    for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
        if set(pa.signals) != set(pb.signals):
            return False
        if not all(np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True) for k in pa.signals):
            return False
    return True


def test_same_seed_same_jobs_and_a_job_does_not_depend_on_n() -> None:
    a = generate_family_aa(seed=11, n=7, start=START)
    b = generate_family_aa(seed=11, n=4, start=START)
    assert all(_same(x, y) for x, y in zip(a, b, strict=False))
    c = generate_family_aa(seed=12, n=4, start=START)
    assert not all(_same(x, y) for x, y in zip(b, c, strict=True))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": -1}, "n must be zero or more"),
        ({"n": 3, "step": 0.0}, "step must be a positive"),
        ({"n": 3, "step": -5.0}, "step must be a positive"),
    ],
)
def test_bad_arguments_say_what_was_wrong(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        generate_family_aa(seed=1, start=START, **kwargs)  # type: ignore[arg-type]


def test_zero_jobs_is_empty() -> None:
    assert generate_family_aa(seed=1, n=0, start=START) == []


def test_classes_balance_and_come_shuffled(family: list[FamilyAAJob]) -> None:
    counts = collections.Counter(j.label for j in family)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) <= 1
    labels = [j.label for j in family]
    assert labels != [CLASSES[i % 5] for i in range(len(labels))]
    assert labels != sorted(labels)


def test_mechanisms_belong_to_their_class_and_memory_has_both(family: list[FamilyAAJob]) -> None:
    for job in family:
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]
    memory = {j.mechanism for j in family if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HBM_BANDWIDTH.value, Mechanism.HOST_MEMORY_PRESSURE.value}


def test_windows_sit_on_the_step_grid_from_start() -> None:
    for job in generate_family_aa(seed=5, n=5, start=START, step=15.0):
        w: JobWindow = job.window
        assert w.start == START == w.timestamps[0]
        assert w.end == w.timestamps[-1]
        assert np.allclose(np.diff(w.timestamps), 15.0)
        assert w.timestamps.size >= 25 * 4
        for pod in w.pods:
            assert pod.gpu_count >= 1
            assert all(v.shape == w.timestamps.shape for v in pod.signals.values())


def test_signals_are_the_contracts_in_its_units(family: list[FamilyAAJob]) -> None:
    max_clock = {g.model: g.max_clock_mhz for g in GPUS}
    for job in family:
        for pod in job.window.pods:
            assert pod.gpu_model is not None
            for name, values in pod.signals.items():
                assert name in SIGNALS
                v = values[np.isfinite(values)]
                if SIGNALS[name].unit == "ratio":
                    assert ((v >= 0) & (v <= 1)).all(), name
                elif SIGNALS[name].unit != "code":
                    assert (v >= 0).all(), name
            power = pod.signals["power_w"]
            if "power_limit_w" in pod.signals:
                limit = pod.signals["power_limit_w"]
                ok = np.isfinite(power) & np.isfinite(limit)
                assert (power[ok] <= limit[ok] + 1e-9).all()
            clock = pod.signals["sm_clock_mhz"]
            assert (clock[np.isfinite(clock)] <= max_clock[pod.gpu_model] + 1e-9).all()


def test_quality_is_what_the_contract_helpers_say(family: list[FamilyAAJob]) -> None:
    for job in family:
        families, coverage = families_and_coverage(job.window.pods)
        assert job.window.quality.families == families
        assert job.window.quality.coverage == pytest.approx(coverage)
        assert 0.8 < coverage <= 1.0
        assert job.window.quality.scrape_interval in (10.0, 15.0, 30.0, 60.0)
