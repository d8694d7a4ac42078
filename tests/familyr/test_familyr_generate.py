"""Family R's entry point: determinism, balance and well-formed windows."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyr import FamilyRJob, generate_family_r
from bottleneck_operator_dev.familyr.fleet import BOARDS

START = 1_700_000_000.0  # the fixture's start (conftest.py)

BOARD = {b.model: b for b in BOARDS}


def test_same_seed_same_family_other_seed_other_family(family: list[FamilyRJob]) -> None:
    again = generate_family_r(11, 60, start=START)
    assert all(same_job(a, b) for a, b in zip(family, again, strict=True))
    other = generate_family_r(12, 60, start=START)
    assert not all(same_job(a, b) for a, b in zip(family, other, strict=True))


def test_classes_equal_in_number_and_shuffled(family: list[FamilyRJob]) -> None:
    counts = collections.Counter(j.label for j in family)
    assert counts == {c: 12 for c in CLASSES}
    labels = [j.label for j in family]
    assert labels != [CLASSES[i % 5] for i in range(60)]
    assert {j.mechanism for j in family if j.label is Bottleneck.MEMORY} == {"host-memory-pressure", "hbm-bandwidth"}
    assert all(j.mechanism in MECHANISMS[j.label] for j in family)


def test_windows_start_at_start_on_the_step_grid(family: list[FamilyRJob]) -> None:
    for job in family:
        w = job.window
        assert 20 <= w.timestamps.size <= 120
        assert w.start == START == w.timestamps[0] and w.end == w.timestamps[-1]
        np.testing.assert_allclose(np.diff(w.timestamps), 30.0)
        assert 1 <= len(w.pods) <= 16
        assert all(1 <= p.gpu_count <= 8 for p in w.pods)
        assert w.quality.scrape_interval is not None and 10 <= w.quality.scrape_interval <= 60
        families, coverage = families_and_coverage(w.pods)
        assert (w.quality.families, w.quality.coverage) == (families, coverage)


def test_only_contract_signals_in_their_units(family: list[FamilyRJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            board = BOARD[pod.gpu_model or ""]
            for name, values in pod.signals.items():
                spec = SIGNALS[name]
                assert values.shape == job.window.timestamps.shape
                v = values[np.isfinite(values)]
                assert (v >= 0).all(), name
                if spec.unit == "ratio":
                    assert (v <= 1.0).all(), name
            sig = pod.signals
            if "power_w" in sig:
                assert np.nanmax(sig["power_w"]) < board.tdp_w
            if "power_limit_w" in sig:
                assert np.nanmax(sig["power_limit_w"]) <= board.tdp_w
                assert np.nanmax(sig["power_w"] - sig["power_limit_w"]) < 0
            if "sm_clock_mhz" in sig:
                assert np.nanmax(sig["sm_clock_mhz"]) <= board.max_clock_mhz


def test_the_variety_is_there(family: list[FamilyRJob]) -> None:
    tags = collections.Counter(t for j in family for t in j.tags)
    assert 0.2 <= tags["mixed"] / len(family) <= 0.55
    speedups = [float(t.removeprefix("speedup-x")) for j in family for t in j.tags if t.startswith("speedup-x")]
    assert min(speedups) < 1.2 and max(speedups) > 2.0
    assert len({p.gpu_model for j in family for p in j.window.pods}) >= 5
    assert len({j.window.quality.scrape_interval for j in family}) >= 3
    field_sets = {"sm_active" in j.window.pods[0].signals for j in family}
    assert field_sets == {True, False}
    rdma = {("ib_rx_bps" in j.window.pods[0].signals) for j in family}
    assert rdma == {True, False}
    assert any(np.isnan(p.signals["gpu_util"]).any() for j in family for p in j.window.pods if "gpu_util" in p.signals)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step > 0"):
        generate_family_r(1, 5, start=START, step=0.0)
    assert generate_family_r(1, 0, start=START) == []


def test_counters_are_read_as_rates(family: list[FamilyRJob]) -> None:
    counters = [n for n, s in SIGNALS.items() if s.kind is Kind.COUNTER]
    seen = [p.signals[n] for j in family for p in j.window.pods for n in counters if n in p.signals]
    assert seen and all((v[np.isfinite(v)] >= 0).all() for v in seen)
