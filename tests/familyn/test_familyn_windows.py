"""Family N's jobs: deterministic, balanced, and well-formed windows in the contract's names and units."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyn import FamilyNJob, generate_family_n
from bottleneck_operator_dev.familyn.hardware import BOARDS
from bottleneck_operator_dev.familyn.scrape import Exporter, _counters, _scrape_times

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: an explicit time, never the clock
BY_MODEL = {b.model_name: b for b in BOARDS.values()}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyNJob]:
    return generate_family_n(11, 60, start=START)


def test_same_arguments_same_family() -> None:
    first, again = generate_family_n(4, 10, start=START), generate_family_n(4, 10, start=START)
    assert all(same_job(a, b) for a, b in zip(first, again, strict=True))


def test_another_seed_another_family() -> None:
    one, other = generate_family_n(4, 10, start=START), generate_family_n(5, 10, start=START)
    assert sum(same_job(a, b) for a, b in zip(one, other, strict=True)) == 0


def test_classes_balanced_and_shuffled(jobs: list[FamilyNJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert counts == dict.fromkeys(CLASSES, 12)
    memory = Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert memory == {"host-memory-pressure": 6, "hbm-bandwidth": 6}
    labels = [j.label for j in jobs]
    assert labels != sorted(labels) and labels != [CLASSES[i % 5] for i in range(60)]
    uneven = Counter(j.label for j in generate_family_n(2, 7, start=START))
    assert max(uneven.values()) - min(uneven.get(c, 0) for c in CLASSES) <= 1


@pytest.mark.parametrize("kwargs", [{"seed": -1, "n": 3}, {"seed": 1, "n": -2}, {"seed": 1, "n": 3, "step": 0.0}])
def test_bad_arguments_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        generate_family_n(start=START, **kwargs)  # type: ignore[arg-type]


def test_windows_on_the_grid(jobs: list[FamilyNJob]) -> None:
    for job in generate_family_n(9, 5, start=START, step=15.0):
        w = job.window
        assert w.step == 15.0 and np.allclose(np.diff(w.timestamps), 15.0)
    for job in jobs:
        w = job.window
        assert w.start == START and w.end == w.timestamps[-1]
        assert 20 <= w.timestamps.size <= 120
        assert np.allclose(w.timestamps, START + 30.0 * np.arange(w.timestamps.size))
        assert 1 <= len(w.pods) <= 16
        assert (w.namespace, w.job) == (job.namespace, job.name)


def test_only_contract_signals_and_shapes(jobs: list[FamilyNJob]) -> None:
    for job in jobs:
        w = job.window
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8
            assert pod.gpu_model in BY_MODEL
            assert set(pod.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape for v in pod.signals.values())
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == coverage
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0
        assert coverage > 0.3


def test_units_in_range(jobs: list[FamilyNJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            board = BY_MODEL[pod.gpu_model or ""]
            s = pod.signals
            for name, values in s.items():
                v = values[np.isfinite(values)]
                assert (v >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    # rate() of a busy-time counter extrapolates over jittered scrapes: a hair over 1, as in Prometheus
                    slack = 0.05 if SIGNALS[name].kind is Kind.COUNTER else 1e-9
                    assert (v <= 1.0 + slack).all(), name
            power = s["power_w"]
            ok = np.isfinite(power)
            assert (power[ok] < board.tdp_w).all()
            if "power_limit_w" in s:
                assert (power[ok] <= s["power_limit_w"][ok]).all()
            assert (s["sm_clock_mhz"][np.isfinite(s["sm_clock_mhz"])] <= board.boost_mhz).all()
            for way in ("pcie_rx_bps", "pcie_tx_bps"):
                if way in s:
                    assert (s[way][np.isfinite(s[way])] <= board.pcie_bps * 1.05).all()
            if "nvlink_tx_bps" in s:
                assert (s["nvlink_tx_bps"][np.isfinite(s["nvlink_tx_bps"])] <= board.nvlink_bps / 2 + 1).all()
            for procs in ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy"):
                if procs in s:
                    v = s[procs][np.isfinite(s[procs])]
                    assert np.array_equal(v, np.round(v))


def test_mig_pods_have_no_gpu_util(jobs: list[FamilyNJob]) -> None:
    more = jobs + generate_family_n(21, 60, start=START)
    mig = [j for j in more if "mig" in j.tags]
    assert mig, "no MIG job drawn: widen the sample"
    assert all("gpu_util" not in p.signals and p.gpu_count == 1 for j in mig for p in j.window.pods)
    assert all(j.window.quality.coverage > 0.3 for j in mig)  # GR_ENGINE_ACTIVE stands in


def test_counters_are_counters() -> None:
    rng = np.random.default_rng(0)
    grid = np.arange(0.0, 1200.0, 5.0)
    rates = np.abs(rng.normal(3.0, 1.0, (2, 3, grid.size)))
    for name in ("cadvisor", "node"):
        exp = Exporter(name, 15.0, 15.0, 0.05, (600.0, 30.0))
        times = _scrape_times(rng, exp, 0.0, 1200.0)
        assert np.all(np.diff(times) > 0) and not ((times >= 600.0) & (times < 630.0)).any()
        values = _counters(rates, times, 0.0, exp, np.full((2, 3), 1e6 if name == "node" else 0.0))
        steps = np.diff(values, axis=-1)
        drops = steps < 0
        if name == "cadvisor":  # a restarted container's counters begin again, once
            assert drops.any(axis=-1).all() and (drops.sum(axis=-1) == 1).all()
        else:
            assert not drops.any()


def test_counter_signals_are_rates(jobs: list[FamilyNJob]) -> None:
    seen = 0
    for job in jobs:
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                if SIGNALS[name].kind is Kind.COUNTER:
                    v = values[np.isfinite(values)]
                    assert (v >= 0).all(), name
                    seen += v.size
    assert seen > 0
