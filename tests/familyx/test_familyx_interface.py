"""Family X's interface: determinism, errors, balance, the grid, the contract's names and units."""

from __future__ import annotations

import collections
from functools import cache

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyx import FamilyXJob, generate_family_x
from bottleneck_operator_dev.familyx.hardware import GPUS

START = 1_700_000_000.0


@cache
def _jobs(seed: int = 7, n: int = 40, step: float = 30.0) -> tuple[FamilyXJob, ...]:
    return tuple(generate_family_x(seed, n, start=START, step=step))


def test_same_seed_same_jobs_and_a_job_does_not_depend_on_n() -> None:
    a = _jobs(7, 40)
    b = generate_family_x(7, 12, start=START)
    for x, y in zip(a[:12], b, strict=True):
        assert (x.name, x.label, x.mechanism, x.tags) == (y.name, y.label, y.mechanism, y.tags)
        for px, py in zip(x.window.pods, y.window.pods, strict=True):
            assert px.signals.keys() == py.signals.keys()
            for key in px.signals:
                np.testing.assert_array_equal(px.signals[key], py.signals[key])
    other = generate_family_x(8, 12, start=START)
    assert [j.tags for j in other] != [j.tags for j in b]


@pytest.mark.parametrize(("n", "step", "words"), [(-1, 30.0, "n must"), (3, 0.0, "step must"), (3, -5.0, "step must")])
def test_bad_arguments_say_what_was_wrong(n: int, step: float, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        generate_family_x(1, n, start=START, step=step)


def test_no_jobs_for_n_zero() -> None:
    assert generate_family_x(1, 0, start=START) == []


def test_classes_balanced_and_shuffled() -> None:
    jobs = _jobs(7, 40)
    counts = collections.Counter(j.label for j in jobs)
    assert counts == dict.fromkeys(CLASSES, 8)
    odd = collections.Counter(j.label for j in jobs[:23])
    assert max(odd.values()) - min(odd.values()) <= 1 and set(odd) == set(CLASSES)
    blocks = [tuple(j.label for j in jobs[k : k + 5]) for k in range(0, 40, 5)]
    assert len(set(blocks)) > 1, "every block in the same order: not shuffled"
    assert blocks[0] != CLASSES


def test_both_memory_mechanisms_occur_and_mechanisms_belong_to_their_class() -> None:
    jobs = _jobs(7, 40)
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]
        assert j.namespace == j.window.namespace and j.name == j.window.job


@pytest.mark.parametrize("step", [30.0, 15.0])
def test_grid_and_shapes(step: float) -> None:
    for j in _jobs(3, 10, step):
        w = j.window
        assert w.start == START and w.timestamps[0] == START and w.end == w.timestamps[-1]
        np.testing.assert_allclose(np.diff(w.timestamps), step)
        assert w.step == step and 60 <= w.timestamps.size <= 120
        assert w.pods and w.gpu_count >= 1
        for p in w.pods:
            for name, values in p.signals.items():
                assert name in SIGNALS
                assert values.shape == w.timestamps.shape and values.dtype == np.float64


def test_signals_in_contract_units() -> None:
    boards = {g.model: g for g in GPUS}
    for j in _jobs(7, 40):
        for p in j.window.pods:
            s = p.signals
            board = boards[str(p.gpu_model)]
            for name, values in s.items():
                v = values[np.isfinite(values)]
                if SIGNALS[name].unit == "ratio":
                    assert ((v >= 0) & (v <= 1)).all(), name
                if SIGNALS[name].kind is Kind.COUNTER:
                    assert (v >= 0).all(), name
            limit = s["power_limit_w"] if "power_limit_w" in s else np.full_like(s["power_w"], board.tdp_w)
            ok = np.isfinite(s["power_w"]) & np.isfinite(limit)
            assert (s["power_w"][ok] <= limit[ok] + 1e-9).all()
            clock = s["sm_clock_mhz"]
            assert (clock[np.isfinite(clock)] <= board.max_clock + 1e-9).all()


def test_quality_filled_with_the_contracts_helpers() -> None:
    for j in _jobs(7, 40):
        q = j.window.quality
        families, coverage = families_and_coverage(j.window.pods)
        assert q.families == families and q.coverage == pytest.approx(coverage)
        assert 0.5 < q.coverage <= 1.0
        assert q.scrape_interval is not None and 10.0 <= q.scrape_interval <= 60.0


def test_600_jobs_generate_in_time() -> None:
    import time

    began = time.process_time()
    generate_family_x(11, 100, start=START)
    # 600 jobs must take well under 15 s on one core: 100 of them well under 2.5 s
    assert time.process_time() - began < 2.5
