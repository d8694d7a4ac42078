"""Family I as a whole: deterministic, balanced, and every window well formed in the contract's terms."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyi import FamilyIJob, generate_family_i
from bottleneck_operator_dev.familyi.hardware import BOARDS

START = 1_750_000_000.0  # an explicit instant, never the clock
TDP = {b.model: b.tdp_w for b in BOARDS}


@pytest.fixture(scope="module")
def family() -> list[FamilyIJob]:
    return generate_family_i(11, 150, start=START, step=30.0)


def test_same_seed_same_family_other_seed_other_family() -> None:
    first = generate_family_i(5, 12, start=START)
    again = generate_family_i(5, 12, start=START)
    other = generate_family_i(6, 12, start=START)
    assert all(same_job(a, b) for a, b in zip(first, again, strict=True))
    assert not all(same_job(a, b) for a, b in zip(first, other, strict=True))


def test_classes_in_equal_numbers_and_shuffled(family: list[FamilyIJob]) -> None:
    counts = Counter(j.label for j in family)
    assert set(counts) == set(CLASSES)
    assert set(counts.values()) == {30}
    labels = [j.label for j in family]
    assert labels != sorted(labels) and labels[:5] != list(CLASSES)
    odd = Counter(j.label for j in generate_family_i(2, 13, start=START))
    assert max(odd.values()) - min(odd.values()) <= 1


def test_both_memory_mechanisms_and_every_mechanism_belongs_to_its_class(family: list[FamilyIJob]) -> None:
    memory = Counter(j.mechanism for j in family if j.label is Bottleneck.MEMORY)
    assert memory[Mechanism.HOST_MEMORY_PRESSURE.value] == memory[Mechanism.HBM_BANDWIDTH.value] == 15
    for job in family:
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]


def test_windows_start_at_start_on_the_step_grid(family: list[FamilyIJob]) -> None:
    for job in family:
        w = job.window
        assert w.start == START and w.step == 30.0 and w.timestamps[0] == START
        assert 20 <= w.timestamps.size <= 120
        assert np.allclose(np.diff(w.timestamps), 30.0) and w.end == w.timestamps[-1]
        assert 1 <= len(w.pods) <= 16 and all(1 <= p.gpu_count <= 8 for p in w.pods)
        assert (w.namespace, w.job) == (job.namespace, job.name)
    steps = generate_family_i(3, 5, start=START, step=15.0)
    assert all(np.allclose(np.diff(j.window.timestamps), 15.0) for j in steps)


def test_only_contract_signals_of_the_window_length(family: list[FamilyIJob]) -> None:
    for job in family:
        size = job.window.timestamps.size
        for pod in job.window.pods:
            assert set(pod.signals) <= set(SIGNALS)
            assert all(v.shape == (size,) and v.dtype == np.float64 for v in pod.signals.values())


def test_quality_is_what_the_pods_carry(family: list[FamilyIJob]) -> None:
    for job in family:
        families, coverage = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == families and q.coverage == pytest.approx(coverage)
        assert q.scrape_interval is not None and 5.0 <= q.scrape_interval <= 60.0
        assert 0.7 <= q.coverage <= 1.0


def _values(family: list[FamilyIJob], name: str) -> np.ndarray:
    rows = [p.signals[name] for j in family for p in j.window.pods if name in p.signals]
    flat = np.concatenate(rows) if rows else np.empty(0)
    return flat[np.isfinite(flat)]


def test_units_in_range(family: list[FamilyIJob]) -> None:
    for name, spec in SIGNALS.items():
        values = _values(family, name)
        if spec.unit == "ratio":
            assert ((values >= 0.0) & (values <= 1.0)).all(), name
        elif spec.unit in ("B/s", "1/s", "cores", "B", "procs", "W", "MHz"):
            assert (values >= 0.0).all(), name
    assert _values(family, "node_cpus").min() >= 48
    assert _values(family, "sm_clock_mhz").min() > 100.0 and _values(family, "sm_clock_mhz").max() <= 2520.0


def test_power_stays_under_the_enforced_limit_and_the_board(family: list[FamilyIJob]) -> None:
    seen_cap = False
    for job in family:
        for pod in job.window.pods:
            power = pod.signals.get("power_w")
            assert pod.gpu_model in TDP
            if power is None:
                continue
            assert np.nanmax(power) <= TDP[pod.gpu_model] + 1e-9
            limit = pod.signals.get("power_limit_w")
            if limit is not None:
                seen_cap |= bool(np.nanmax(limit) < TDP[pod.gpu_model])
                assert (power[np.isfinite(limit)] <= limit[np.isfinite(limit)] + 1e-9).all()
    assert seen_cap


def test_variety_real_clusters_show(family: list[FamilyIJob]) -> None:
    tags = Counter(t for j in family for t in j.tags)
    for tag in (
        "dcgm-dev-only",
        "dcgm-default",
        "dcgm-full",
        "shared-node",
        "power-capped",
        "checkpoint-pauses",
        "straggler",
    ):
        assert tags[tag] > 0, tag
    assert any(t.endswith("-exporter-restart") for t in tags)
    assert tags["borderline"] + tags["moderate"] >= len(family) // 5
    intervals = {j.window.quality.scrape_interval for j in family}
    assert {5.0, 60.0} <= intervals
    without_sidecar = [j for j in family if Family.SIDECAR not in j.window.quality.families]
    assert 0 < len(without_sidecar) < len(family)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step"):
        generate_family_i(1, 5, start=START, step=0.0)
    assert generate_family_i(1, 0, start=START) == []
