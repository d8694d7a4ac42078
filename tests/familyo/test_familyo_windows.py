"""Family O's windows: deterministic, balanced, well-formed, in the contract's names and units."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyo import FamilyOJob, generate_family_o
from bottleneck_operator_dev.familyo.hardware import BOARDS

START = 1_800_000_000.0
BOARD = {b.model: b for b in BOARDS}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyOJob]:
    return generate_family_o(11, 100, start=START)


def test_same_seed_same_jobs_and_other_seed_other_jobs() -> None:
    first = generate_family_o(3, 10, start=START)
    again = generate_family_o(3, 10, start=START)
    other = generate_family_o(4, 10, start=START)
    assert all(same_job(a, b) for a, b in zip(first, again, strict=True))
    assert not all(same_job(a, b) for a, b in zip(first, other, strict=True))


def test_a_job_depends_on_its_index_not_on_how_many_came_before() -> None:
    short, long = generate_family_o(5, 5, start=START), generate_family_o(5, 10, start=START)
    # Job i is seeded (seed, i); only the class order depends on n, so compare jobs of one class.
    by_index = {j.name.split("-")[1]: j for j in long}
    matched = [j for j in short if j.name.split("-")[1] in by_index and by_index[j.name.split("-")[1]].label == j.label]
    assert all(same_job(j, by_index[j.name.split("-")[1]]) for j in matched)


def test_classes_in_equal_numbers_in_shuffled_order(jobs: list[FamilyOJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert counts == {cls: 20 for cls in CLASSES}
    memory = Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert memory == {"host-memory-pressure": 10, "hbm-bandwidth": 10}
    labels = [j.label for j in jobs]
    assert labels != sorted(labels) and labels[:5] != labels[5:10]


def test_mechanisms_are_the_contracts(jobs: list[FamilyOJob]) -> None:
    for job in jobs:
        assert job.mechanism in {m.value for m in MECHANISMS[job.label]}, (job.name, job.mechanism)


def test_windows_are_on_the_grid_from_start(jobs: list[FamilyOJob]) -> None:
    for job in jobs:
        w = job.window
        assert (w.namespace, w.job) == (job.namespace, job.name)
        assert w.start == START and w.step == 30.0
        assert 20 <= w.timestamps.size <= 120
        assert np.allclose(np.diff(w.timestamps), 30.0) and w.timestamps[0] == START
        assert w.end == w.timestamps[-1]
        assert 1 <= len(w.pods) <= 16
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8 and pod.gpu_model in BOARD
            for name, values in pod.signals.items():
                assert name in SIGNALS, name
                assert values.shape == w.timestamps.shape


def test_other_step_and_start_are_honoured() -> None:
    (job,) = generate_family_o(2, 1, start=1000.0, step=15.0)
    assert job.window.start == 1000.0 and np.allclose(np.diff(job.window.timestamps), 15.0)


def test_quality_is_what_the_pods_carry(jobs: list[FamilyOJob]) -> None:
    for job in jobs:
        families, coverage = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == families and q.coverage == pytest.approx(coverage)
        assert q.scrape_interval is not None and 5.0 <= q.scrape_interval <= 60.0


def test_units_in_range(jobs: list[FamilyOJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            board = BOARD[pod.gpu_model or ""]
            for name, values in pod.signals.items():
                finite = values[np.isfinite(values)]
                spec = SIGNALS[name]
                assert (finite >= 0).all(), name
                if spec.unit == "ratio":
                    assert (finite <= 1.0 + 1e-9).all(), (job.name, name, finite.max())
            sig = pod.signals
            assert np.nanmax(sig["power_w"]) <= board.tdp_w
            if "power_limit_w" in sig:
                assert (sig["power_w"] <= sig["power_limit_w"] + 1e-9)[np.isfinite(sig["power_w"])].all()
            assert np.nanmax(sig["sm_clock_mhz"]) <= board.max_mhz
            if "cpu_cores" in sig and "node_cpus" in sig:
                assert np.nanmax(sig["cpu_cores"]) <= np.nanmax(sig["node_cpus"])


def test_exporter_variety_shows(jobs: list[FamilyOJob]) -> None:
    """Some jobs lack the profiling fields, some the sidecar, some node-exporter; intervals differ."""
    names = [set().union(*(p.signals for p in j.window.pods)) for j in jobs]
    assert any("gr_engine_active" not in n for n in names) and any("sm_active" in n for n in names)
    assert any("sc_cpu_cores" not in n for n in names) and any("node_cpus" not in n for n in names)
    assert any("sc_cpu_cores" in n and "sc_psi_cpu_some" not in n for n in names)  # cgroup v1
    assert len({j.window.quality.scrape_interval for j in jobs}) >= 4


def test_gaps_and_counter_signals_are_nan_not_zero_where_unread(jobs: list[FamilyOJob]) -> None:
    restarted = [j for j in jobs if any(t.startswith("restart:") for t in j.tags)]
    assert restarted
    counters = [n for n, s in SIGNALS.items() if s.kind is Kind.COUNTER]
    gaps = [
        np.isnan(p.signals[n]).any() for j in restarted for p in j.window.pods[:1] for n in counters if n in p.signals
    ]
    assert any(gaps)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step"):
        generate_family_o(1, 5, start=START, step=0.0)
    with pytest.raises(ValueError, match="n >= 0"):
        generate_family_o(1, -1, start=START)
