"""Family AM: determinism, independence of n, the window contract, and the counterfactual label."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator_dev.familyam import FamilyAMJob, generate_family_am
from bottleneck_operator_dev.familyam.series import counter_values
from bottleneck_operator_dev.familyam.stages import Stages, label_of

PROF = {Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAMJob]:
    return generate_family_am(7, 100)


def _same(a: FamilyAMJob, b: FamilyAMJob) -> bool:
    if (a.name, a.label, a.mechanism, a.tags) != (b.name, b.label, b.mechanism, b.tags):
        return False
    if not np.array_equal(a.window.timestamps, b.window.timestamps):
        return False
    for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
        if set(pa.signals) != set(pb.signals):
            return False
        if not all(np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True) for k in pa.signals):
            return False
    return True


def test_same_seed_same_jobs() -> None:
    a, b = generate_family_am(3, 12), generate_family_am(3, 12)
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))
    c = generate_family_am(4, 12)
    assert not all(_same(x, y) for x, y in zip(a, c, strict=True))


def test_job_i_does_not_depend_on_n() -> None:
    short, long = generate_family_am(11, 6), generate_family_am(11, 23)
    assert all(_same(x, y) for x, y in zip(short, long[:6], strict=True))


@pytest.mark.parametrize(("n", "step", "word"), [(-1, 30.0, "n"), (5, 0.0, "step"), (5, -2.0, "step")])
def test_bad_arguments_raise(n: int, step: float, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        generate_family_am(0, n, step=step)


def test_zero_jobs() -> None:
    assert generate_family_am(0, 0) == []


def test_intents_balanced_and_labels_spread(jobs: list[FamilyAMJob]) -> None:
    intents = Counter(t for j in jobs for t in j.tags if t.startswith("intent:"))
    assert set(intents.values()) == {20}
    labels = Counter(j.label for j in jobs)
    assert set(labels) == set(CLASSES)
    assert min(labels.values()) >= 10


def test_labels_and_mechanisms_valid(jobs: list[FamilyAMJob]) -> None:
    for j in jobs:
        assert j.label in CLASSES and j.label is not Bottleneck.UNKNOWN
        assert j.mechanism in MECHANISMS[j.label]
        assert j.window.namespace == j.namespace and j.window.job == j.name


def test_windows_use_contract_names_and_shapes(jobs: list[FamilyAMJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.timestamps.ndim == 1 and np.all(np.diff(w.timestamps) == w.step)
        assert w.start == w.timestamps[0] and w.end == w.timestamps[-1]
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0
        assert 0.0 < w.quality.coverage <= 1.0
        for pod in w.pods:
            assert pod.gpu_count >= 1 and pod.gpu_model
            for name, values in pod.signals.items():
                assert name in SIGNALS
                assert values.shape == w.timestamps.shape
                spec = SIGNALS[name]
                finite = values[np.isfinite(values)]
                if spec.kind is Kind.COUNTER or spec.unit == "ratio":
                    assert np.all(finite >= 0.0), name  # a rate of a counter is never negative
                if spec.unit == "ratio":
                    assert np.all(finite <= 1.0), name


def test_counters_monotone_outside_drawn_resets() -> None:
    rng = np.random.default_rng(0)
    times = np.arange(0.0, 600.0, 15.0)
    rates = rng.uniform(0.0, 5.0, times.size)
    plain = counter_values(rng, rates, times, None)
    assert np.all(np.diff(plain) >= 0)
    reset = counter_values(rng, rates, times, 20)
    drops = np.flatnonzero(np.diff(reset) < 0) + 1
    assert drops.tolist() == [20]
    assert reset[20] == pytest.approx(rates[20] * 15.0)


def test_dev_only_jobs_carry_no_profiling_fields(jobs: list[FamilyAMJob]) -> None:
    dev_only = [j for j in jobs if "fields:dev-only" in j.tags]
    assert dev_only
    for j in dev_only:
        assert not (j.window.quality.families & PROF)
        for pod in j.window.pods:
            assert not any(SIGNALS[n].family in PROF for n in pod.signals)
        assert "no PROF fields" in j.window.quality.notes


def test_too_short_jobs_exist_and_are_tagged() -> None:
    jobs = generate_family_am(5, 120)
    short = [j for j in jobs if "too-short" in j.tags]
    assert short
    for j in short:
        si = j.window.quality.scrape_interval
        assert si is not None and j.window.duration < 20 * si
    assert all(j.window.duration >= 20 * 60 for j in jobs if "too-short" not in j.tags)


def test_hard_tag_marks_close_calls(jobs: list[FamilyAMJob]) -> None:
    assert any("hard" in j.tags for j in jobs)
    assert sum("hard" in j.tags for j in jobs) < len(jobs) / 2


BASE = Stages(
    io=0.1,
    decode=0.1,
    h2d=0.02,
    h2d_overlapped=True,
    launch=0.02,
    launch_cpu=0.0,
    flops=0.4,
    hbm=0.1,
    comm_intra=0.0,
    comm_inter=0.0,
    overlap=0.5,
    host_mem=0.0,
    io_mechanism=Mechanism.LOCAL_DISK,
    cpu_mechanism=Mechanism.THROTTLED,
    intra_mechanism=Mechanism.NVLINK,
)


@pytest.mark.parametrize(
    ("changes", "label", "mechanism"),
    [
        ({}, Bottleneck.GPU, Mechanism.COMPUTE),
        ({"launch": 0.8}, Bottleneck.GPU, Mechanism.LAUNCH_BOUND),
        ({"io": 0.9, "io_mechanism": Mechanism.NETWORK_STORAGE}, Bottleneck.IO, Mechanism.NETWORK_STORAGE),
        ({"decode": 0.9, "cpu_mechanism": Mechanism.TOO_FEW_WORKERS}, Bottleneck.CPU, Mechanism.TOO_FEW_WORKERS),
        ({"comm_inter": 0.9}, Bottleneck.INTERCONNECT, Mechanism.NETWORK),
        ({"comm_intra": 0.9}, Bottleneck.INTERCONNECT, Mechanism.NVLINK),
        ({"h2d": 0.6, "h2d_overlapped": False}, Bottleneck.INTERCONNECT, Mechanism.PCIE),
        ({"hbm": 0.9}, Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
        ({"host_mem": 0.6}, Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
    ],
)
def test_counterfactual_label_on_hand_built_stages(
    changes: dict[str, object], label: Bottleneck, mechanism: Mechanism
) -> None:
    verdict = label_of([replace(BASE, **changes)])  # type: ignore[arg-type]
    assert verdict.label is label
    assert verdict.mechanism is mechanism
    assert verdict.speedups[label] > 1.0


def test_slowest_pod_decides() -> None:
    # one pod pinned on a starved host: its decode bounds the whole synchronous Job
    fast, slow = BASE, replace(BASE, decode=1.0)
    verdict = label_of([fast, slow])
    assert verdict.label is Bottleneck.CPU
    assert verdict.speedups[Bottleneck.CPU] == pytest.approx((1.0 + 0.015) / 0.4 * 1.0, rel=0.1)


def test_overlapped_comm_is_not_the_bound() -> None:
    # all-reduce hidden behind backward: removing it gains nothing
    verdict = label_of([replace(BASE, comm_inter=0.1)])
    assert verdict.label is Bottleneck.GPU
    assert verdict.speedups[Bottleneck.INTERCONNECT] == pytest.approx(1.0)
