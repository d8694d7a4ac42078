"""Family E as a whole: determinism, class balance, and windows that keep the data contract."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familye import FamilyEJob, generate_family_e
from bottleneck_operator_dev.familye.family import build_job, class_order
from bottleneck_operator_dev.familye.hardware import BOARDS

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z, an explicit time: nothing here reads the clock
BOARD_BY_NAME = {b.model_name: b for b in BOARDS}


@pytest.fixture(scope="module")
def family() -> list[FamilyEJob]:
    return generate_family_e(2026, 40, start=START)


def test_same_seed_same_family() -> None:
    a = generate_family_e(7, 10, start=START)
    b = generate_family_e(7, 10, start=START)
    assert [(j.name, j.label, j.mechanism, j.tags) for j in a] == [(j.name, j.label, j.mechanism, j.tags) for j in b]
    for ja, jb in zip(a, b, strict=True):
        for pa, pb in zip(ja.window.pods, jb.window.pods, strict=True):
            assert list(pa.signals) == list(pb.signals)
            for name in pa.signals:
                np.testing.assert_array_equal(pa.signals[name], pb.signals[name])


def test_other_seed_other_family() -> None:
    a = generate_family_e(7, 10, start=START)
    b = generate_family_e(8, 10, start=START)
    assert [j.name for j in a] != [j.name for j in b]


def test_job_comes_from_its_own_generator(family: list[FamilyEJob]) -> None:
    order = class_order(2026, 40)
    i = 13
    memory_before = sum(c is Bottleneck.MEMORY for c in order[:i])
    again = build_job(2026, i, order[i], memory_before, start=START, step=30.0)
    assert (again.name, again.label, again.mechanism) == (family[i].name, family[i].label, family[i].mechanism)
    np.testing.assert_array_equal(again.window.timestamps, family[i].window.timestamps)


def test_classes_balanced_and_shuffled() -> None:
    jobs = generate_family_e(3, 20, start=START)
    counts = collections.Counter(j.label for j in jobs)
    assert counts == {c: 4 for c in CLASSES}
    memory = collections.Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert memory == {"host-memory-pressure": 2, "hbm-bandwidth": 2}
    assert [j.label for j in jobs] != sorted((j.label for j in jobs), key=CLASSES.index)


def test_uneven_count_differs_by_at_most_one() -> None:
    counts = collections.Counter(class_order(5, 13))
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) == 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_e(1, -1, start=START)
    with pytest.raises(ValueError, match="step must be"):
        generate_family_e(1, 5, start=START, step=0.0)
    with pytest.raises(ValueError, match="seed must be"):
        generate_family_e(-1, 5, start=START)
    with pytest.raises(ValueError, match="start must be"):
        generate_family_e(1, 5, start=float("nan"))


def test_mechanisms_are_the_contracts(family: list[FamilyEJob]) -> None:
    for job in family:
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]
        assert f"mechanism:{job.mechanism}" in job.tags


def test_windows_start_at_start_on_the_step_grid(family: list[FamilyEJob]) -> None:
    names = set()
    for job in family:
        w = job.window
        n = w.timestamps.size
        assert 20 <= n <= 120
        np.testing.assert_array_equal(w.timestamps, START + 30.0 * np.arange(n))
        assert (w.start, w.end, w.step) == (START, w.timestamps[-1], 30.0)
        assert 1 <= len(w.pods) <= 16
        assert (w.namespace, w.job) == (job.namespace, job.name)
        names.add((job.namespace, job.name))
        for pod in w.pods:
            assert pod.gpu_count == 0 or 1 <= pod.gpu_count <= 8
            assert pod.node is not None and pod.co_located_pods >= 0
    assert len(names) == len(family)


def test_another_step_keeps_the_grid() -> None:
    (job,) = generate_family_e(4, 1, start=START, step=15.0)
    np.testing.assert_array_equal(job.window.timestamps, START + 15.0 * np.arange(job.window.timestamps.size))


def test_only_contract_signals_with_quality_filled(family: list[FamilyEJob]) -> None:
    for job in family:
        w = job.window
        for pod in w.pods:
            assert set(pod.signals) <= set(SIGNALS)
            for name in pod.signals:
                assert pod.signals[name].shape == w.timestamps.shape
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families
        assert w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval in (5.0, 10.0, 15.0, 30.0, 60.0)


def test_units_in_range(family: list[FamilyEJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            sig = pod.signals
            for name in sig:
                v = sig[name][np.isfinite(sig[name])]
                if SIGNALS[name].unit == "ratio":
                    assert ((v >= 0) & (v <= 1)).all(), name
                elif name != "xid_code":
                    assert (v >= 0).all(), name
            if pod.gpu_model is None:
                continue
            board = BOARD_BY_NAME[pod.gpu_model]
            if "power_w" in sig:
                assert np.nanmax(sig["power_w"]) <= board.tdp_w
                assert np.nanmin(sig["power_w"]) >= board.idle_w * 0.9
            if "power_limit_w" in sig:
                assert (sig["power_w"] <= sig["power_limit_w"] + 1e-6)[
                    np.isfinite(sig["power_w"] + sig["power_limit_w"])
                ].all()
            if "sm_clock_mhz" in sig:
                assert np.nanmax(sig["sm_clock_mhz"]) <= board.boost_mhz


def test_cpu_never_above_its_limit(family: list[FamilyEJob]) -> None:
    seen = 0
    for job in family:
        for pod in job.window.pods:
            if "cpu_cores" in pod.signals and "cpu_limit_cores" in pod.signals:
                both = np.isfinite(pod.signals["cpu_cores"] + pod.signals["cpu_limit_cores"])
                # rate() extrapolation may overshoot a flat counter by a little, never by a core's worth
                assert (pod.signals["cpu_cores"][both] <= pod.signals["cpu_limit_cores"][both] * 1.05).all()
                seen += 1
    assert seen > 0


def test_pods_fit_their_nodes_and_limits(family: list[FamilyEJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            sig = pod.signals
            if "cpu_cores" in sig and "node_cpus" in sig:
                both = np.isfinite(sig["cpu_cores"] + sig["node_cpus"])
                assert (sig["cpu_cores"][both] <= sig["node_cpus"][both] * 1.05).all()
            if "mem_working_set_bytes" in sig and "mem_limit_bytes" in sig:
                both = np.isfinite(sig["mem_working_set_bytes"] + sig["mem_limit_bytes"])
                assert (sig["mem_working_set_bytes"][both] <= sig["mem_limit_bytes"][both]).all()


def test_counter_signals_are_rates_of_monotone_counters(family: list[FamilyEJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            for name in pod.signals:
                if SIGNALS[name].kind is Kind.COUNTER:
                    v = pod.signals[name]
                    assert (v[np.isfinite(v)] >= 0).all(), name


def test_variety_of_real_clusters(family: list[FamilyEJob]) -> None:
    tags = collections.Counter(t.split(":")[0] if ":" in t else t for j in family for t in j.tags)
    boards = {t for j in family for t in j.tags if t.startswith("board:")}
    assert len(boards) >= 4
    assert tags["fabric"] > 0 and tags["power-capped"] > 0 and tags["shared-node"] > 0
    field_sets = collections.Counter(
        frozenset(f.value for f in j.window.quality.families if f.value.startswith("dcgm")) for j in family
    )
    assert len(field_sets) >= 3
