"""Family F as a data set: deterministic, balanced, and every window well formed."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyf import FamilyFJob, generate_family_f
from bottleneck_operator_dev.familyf.boards import BOARDS
from bottleneck_operator_dev.familyf.jobs import family_f_job

START = 1_800_000_000.0  # an explicit time: nothing here reads the clock


@pytest.fixture(scope="module")
def jobs() -> list[FamilyFJob]:
    return generate_family_f(7, 100, start=START)


def test_a_seed_gives_the_same_family_and_another_seed_another() -> None:
    first, again, other = (generate_family_f(s, 10, start=START) for s in (3, 3, 4))
    assert all(same_job(a, b) for a, b in zip(first, again, strict=True))
    assert not all(same_job(a, b) for a, b in zip(first, other, strict=True))


def test_job_i_comes_from_its_own_generator() -> None:
    family = generate_family_f(11, 12, start=START)
    for i in (0, 5, 11):
        assert same_job(family[i], family_f_job(11, i, family[i].label, start=START))


@pytest.mark.parametrize("n", [25, 23, 5, 0])
def test_the_classes_come_in_equal_numbers(n: int) -> None:
    counts = collections.Counter(j.label for j in generate_family_f(2, n, start=START))
    assert sum(counts.values()) == n
    assert set(counts) <= set(CLASSES)
    if n:
        assert max(counts[c] for c in CLASSES) - min(counts[c] for c in CLASSES) <= 1


def test_the_order_is_shuffled(jobs: list[FamilyFJob]) -> None:
    labels = [j.label for j in jobs]
    assert labels != sorted(labels) and labels[:5] != list(CLASSES)


def test_both_memory_mechanisms_and_every_label_mechanism_pair_are_valid(jobs: list[FamilyFJob]) -> None:
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}


def test_windows_sit_on_the_step_grid_from_start(jobs: list[FamilyFJob]) -> None:
    for j in jobs:
        w = j.window
        assert 20 <= w.timestamps.size <= 120
        assert np.allclose(w.timestamps, START + 30.0 * np.arange(w.timestamps.size))
        assert w.start == START and w.end == w.timestamps[-1] and w.step == 30.0
        assert 1 <= len(w.pods) <= 16 and all(1 <= p.gpu_count <= 8 for p in w.pods)
        assert (w.namespace, w.job) == (j.namespace, j.name)


def test_another_step_moves_the_grid() -> None:
    (job,) = generate_family_f(5, 1, start=START, step=15.0)
    assert np.allclose(np.diff(job.window.timestamps), 15.0)


def test_only_contract_signals_of_the_window_length(jobs: list[FamilyFJob]) -> None:
    for j in jobs:
        for p in j.window.pods:
            assert set(p.signals) <= set(SIGNALS)
            assert all(v.shape == j.window.timestamps.shape for v in p.signals.values())
            assert not any(np.isinf(v).any() for v in p.signals.values())


def test_quality_is_what_the_pods_carry(jobs: list[FamilyFJob]) -> None:
    for j in jobs:
        families, coverage = families_and_coverage(j.window.pods)
        assert j.window.quality.families == families and j.window.quality.coverage == pytest.approx(coverage)
        assert j.window.quality.scrape_interval in (5.0, 10.0, 15.0, 30.0, 60.0)


def test_units_are_in_range(jobs: list[FamilyFJob]) -> None:
    boards = {b.model_name: b for b in BOARDS}
    for j in jobs:
        for p in j.window.pods:
            s, board = p.signals, boards[str(p.gpu_model)]
            for name, values in s.items():
                v = values[np.isfinite(values)]
                assert (v >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    # a busy-time counter's rate() over jittered scrapes may pass 1 by a hair, as on real hosts
                    slack = 0.01 if SIGNALS[name].kind is Kind.COUNTER else 1e-9
                    assert (v <= 1.0 + slack).all(), (name, v.max())
            assert np.nanmax(s["power_w"], initial=0.0) <= board.tdp_w
            assert np.nanmax(s["sm_clock_mhz"], initial=0.0) <= board.boost_mhz
            if "power_limit_w" in s:
                assert (s["power_w"] <= s["power_limit_w"] + 1e-9)[np.isfinite(s["power_limit_w"])].all()
            if "cpu_limit_cores" in s and "cpu_cores" in s:
                # rate() extrapolates to the range's edges: a little over the quota, never far
                assert np.nanmax(s["cpu_cores"] / s["cpu_limit_cores"], initial=0.0) <= 1.1


def test_the_variety_is_there(jobs: list[FamilyFJob]) -> None:
    tags = collections.Counter(t for j in jobs for t in j.tags)
    assert {"dcgm-dev", "dcgm-default", "dcgm-full", "borderline", "shared-node", "power-capped"} <= set(tags)
    assert len({j.window.quality.scrape_interval for j in jobs}) >= 4
    assert len({p.gpu_model for j in jobs for p in j.window.pods}) >= 5


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step"):
        generate_family_f(1, 3, start=START, step=0.0)
    with pytest.raises(ValueError, match="n="):
        generate_family_f(1, -1, start=START)
