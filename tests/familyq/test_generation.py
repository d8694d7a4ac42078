"""Family Q's entry: determinism, balance and the shape of every window."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNAL_NAMES, SIGNALS
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyq import FamilyQJob, generate_family_q

START = 1_760_000_000.0  # an explicit time: nothing here reads the clock


@pytest.fixture(scope="module")
def family() -> list[FamilyQJob]:
    return generate_family_q(7, 100, start=START)


FIVE = {Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY}


def test_same_seed_same_jobs_other_seed_other_jobs() -> None:
    first, again = generate_family_q(3, 15, start=START), generate_family_q(3, 15, start=START)
    assert all(same_job(a, b) for a, b in zip(first, again, strict=True))
    other = generate_family_q(4, 15, start=START)
    assert not all(same_job(a, b) for a, b in zip(first, other, strict=True))


def test_a_job_depends_on_its_own_draw_only() -> None:
    """Job i comes from the generator seeded (seed, i): asking for more jobs leaves the first ones as they were."""
    few, more = generate_family_q(5, 10, start=START), generate_family_q(5, 20, start=START)
    same_class = [i for i in range(10) if few[i].label is more[i].label]
    assert same_class
    assert all(same_job(few[i], more[i]) for i in same_class)


@pytest.mark.parametrize("n", [5, 7, 50])
def test_the_five_classes_come_in_equal_numbers(n: int) -> None:
    counts = Counter(job.label for job in generate_family_q(11, n, start=START))
    assert set(counts) <= FIVE
    assert max(counts.values()) - min(counts.get(c, 0) for c in FIVE) <= 1
    assert sum(counts.values()) == n


def test_classes_are_shuffled_and_both_memory_mechanisms_appear(family: list[FamilyQJob]) -> None:
    labels = [job.label for job in family]
    assert labels[:5] != [Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY]
    memory = Counter(job.mechanism == "hbm-bound-kernels" for job in family if job.label is Bottleneck.MEMORY)
    assert abs(memory[True] - memory[False]) <= 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step > 0"):
        generate_family_q(1, 3, start=START, step=0.0)
    with pytest.raises(ValueError, match="n >= 0"):
        generate_family_q(1, -1, start=START)


def test_windows_sit_on_the_grid_from_start(family: list[FamilyQJob]) -> None:
    for job in family:
        w = job.window
        assert 20 <= len(w.timestamps) <= 120
        assert w.start == START
        np.testing.assert_allclose(w.timestamps, START + 30.0 * np.arange(len(w.timestamps)))
        assert w.end == w.timestamps[-1]
        assert w.step == 30.0
        assert (w.namespace, w.job) == (job.namespace, job.name)
        assert 1 <= len(w.pods) <= 16
        assert len({p.pod for p in w.pods}) == len(w.pods)


def test_other_steps_move_the_grid() -> None:
    job = generate_family_q(2, 1, start=START, step=15.0)[0]
    np.testing.assert_allclose(np.diff(job.window.timestamps), 15.0)


def test_pods_carry_contract_signals_of_window_length(family: list[FamilyQJob]) -> None:
    for job in family:
        length = len(job.window.timestamps)
        for pod in job.window.pods:
            assert 1 <= pod.gpu_count <= 8
            assert pod.gpu_model and pod.gpu_model.startswith("NVIDIA ")
            assert set(pod.signals) <= set(SIGNAL_NAMES)
            assert {"gpu_util", "power_w", "sm_clock_mhz"} <= set(pod.signals)
            for values in pod.signals.values():
                assert values.shape == (length,)
                assert values.dtype == np.float64


def test_quality_is_what_the_pods_carry(family: list[FamilyQJob]) -> None:
    for job in family:
        q = job.window.quality
        assert (q.families, q.coverage) == families_and_coverage(job.window.pods)
        assert q.scrape_interval is not None and 5.0 <= q.scrape_interval <= 60.0
        assert 0.0 < q.coverage <= 1.0


def test_units_stay_in_range(family: list[FamilyQJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                seen = values[np.isfinite(values)]
                unit = SIGNALS[name].unit
                assert (seen >= 0.0).all(), name
                if unit == "ratio":
                    assert (seen <= 1.0).all(), name
            power, limit = pod.signals["power_w"], pod.signals.get("power_limit_w")
            assert np.nanmax(power) <= 700.0
            if limit is not None:
                both = np.isfinite(power) & np.isfinite(limit)
                assert (power[both] <= limit[both] + 1e-9).all()
            clock = pod.signals["sm_clock_mhz"]
            assert np.nanmin(clock) >= 200.0 and np.nanmax(clock) <= 2520.0


def test_the_variety_the_family_promises(family: list[FamilyQJob]) -> None:
    tags = Counter(tag for job in family for tag in job.tags)
    fields = {t for t in tags if t.startswith("dcgm:")}
    assert fields == {"dcgm:dev-only", "dcgm:default", "dcgm:full"}
    assert {"strength:barely", "strength:moderate", "strength:strong"} <= set(tags)
    mixed = sum(any(t.startswith("mixed:") for t in job.tags) for job in family)
    assert 0.2 * len(family) <= mixed <= 0.5 * len(family)
    boards = {t for t in tags if t.startswith("board:")}
    assert len(boards) >= 5
    assert any(len(job.window.pods) > 1 for job in family)
    assert any(job.window.gpu_count == 1 for job in family)
    assert tags["shared-node"] > 0 and tags["power-capped"] > 0
    gaps = [job for job in family if any(np.isnan(p.signals["power_w"]).any() for p in job.window.pods)]
    assert gaps, "some exporter restarted mid-window"
