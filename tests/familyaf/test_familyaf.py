"""Family AF: interface, determinism, balance, contract names and shapes, physical sanity."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow, families_and_coverage
from bottleneck_operator_dev.familyaf import FamilyAFJob, generate_family_af
from bottleneck_operator_dev.familyaf.exporters import INTERVALS, counter_samples
from bottleneck_operator_dev.familyaf.stepmodel import Composition, judge
from bottleneck_operator_dev.familyaf.timeline import Timeline

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
N = 40


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAFJob]:
    return generate_family_af(7, N, start=START)


def test_interface(jobs: list[FamilyAFJob]) -> None:
    assert len(jobs) == N
    assert generate_family_af(7, 0, start=START) == []
    job = jobs[0]
    assert isinstance(job, FamilyAFJob) and isinstance(job.window, JobWindow)
    assert [f.name for f in dataclasses.fields(FamilyAFJob)] == [
        "namespace",
        "name",
        "label",
        "mechanism",
        "tags",
        "window",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.name = "other"  # type: ignore[misc]
    assert all(isinstance(j.tags, tuple) and all(isinstance(t, str) for t in j.tags) for j in jobs)
    assert len({(j.namespace, j.name) for j in jobs}) == N


@pytest.mark.parametrize(("kwargs", "word"), [({"n": -1}, "n"), ({"step": 0.0}, "step"), ({"step": -5.0}, "step")])
def test_argument_errors(kwargs: dict[str, float], word: str) -> None:
    args: dict[str, float] = {"n": 2, "step": 30.0} | kwargs
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        generate_family_af(1, int(args["n"]), start=START, step=args["step"])


def test_deterministic_per_job(jobs: list[FamilyAFJob]) -> None:
    again = generate_family_af(7, 6, start=START)
    assert all(same_job(a, b) for a, b in zip(again, jobs[:6], strict=True))
    other = generate_family_af(8, 6, start=START)
    assert not all(same_job(a, b) for a, b in zip(other, jobs[:6], strict=True))


def test_independent_of_n(jobs: list[FamilyAFJob]) -> None:
    few = generate_family_af(7, 3, start=START)
    assert all(same_job(a, b) for a, b in zip(few, jobs[:3], strict=True))


def test_classes_balanced(jobs: list[FamilyAFJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert all(N / 5 - 3 <= counts[c] <= N / 5 + 3 for c in CLASSES), counts


def test_labels_and_mechanisms(jobs: list[FamilyAFJob]) -> None:
    for j in jobs:
        assert j.label is not Bottleneck.UNKNOWN and j.label in CLASSES
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]


def test_signals_are_contract_signals_and_windows_have_their_shape(jobs: list[FamilyAFJob]) -> None:
    for j in jobs:
        w = j.window
        assert (w.namespace, w.job, w.start, w.step) == (j.namespace, j.name, START, 30.0)
        assert np.allclose(w.timestamps, START + 30.0 * np.arange(w.timestamps.size))
        assert w.end == w.timestamps[-1]
        assert len({p.pod for p in w.pods}) == len(w.pods) >= 1
        for p in w.pods:
            assert p.gpu_count >= 1 and p.node and p.gpu_model
            assert set(p.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape and v.dtype == np.float64 for v in p.signals.values())
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval in INTERVALS


def test_tags_say_what_was_drawn(jobs: list[FamilyAFJob]) -> None:
    for j in jobs:
        for prefix in ("gpu:", "pods:", "fabric:", "storage:", "scrape:", "fields:"):
            assert any(t.startswith(prefix) for t in j.tags), (prefix, j.tags)
        assert ("too-short" in j.tags) == (j.window.duration < 900)


def test_physical_sanity(jobs: list[FamilyAFJob]) -> None:
    for j in jobs:
        for p in j.window.pods:
            for name, v in p.signals.items():
                finite = v[np.isfinite(v)]
                assert not np.isinf(v).any(), name
                assert (finite >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (finite <= 1).all(), name
            if "power_w" in p.signals and "power_limit_w" in p.signals:
                power, cap = p.signals["power_w"], p.signals["power_limit_w"]
                ok = np.isfinite(power) & np.isfinite(cap)
                assert (power[ok] <= cap[ok] * 1.02).all()
            if "gpu_util" in p.signals:
                assert np.isfinite(p.signals["gpu_util"]).mean() > 0.5


def test_counters_monotone_except_drawn_resets() -> None:
    cells = 200
    tl = Timeline(0.0, cells, np.zeros(cells, np.int64), np.ones(cells), np.ones((1, cells)), ())
    rates = np.abs(np.random.default_rng(0).normal(5.0, 2.0, cells))
    times = np.arange(3.0, 990.0, 15.0)
    plain = counter_samples(rates, tl, times, (), 1e6)
    assert (np.diff(plain) >= 0).all()
    reset = counter_samples(rates, tl, times, (400.0,), 1e6)
    drops = np.flatnonzero(np.diff(reset) < 0)
    assert drops.size == 1 and times[drops[0]] < 400.0 <= times[drops[0] + 1]


def test_counterfactual_label() -> None:
    one = np.ones(2)
    t = {k: 0.0 * one for k in ("reclaim", "h2d", "intra", "tp", "net", "misc", "gemm_mem")}
    t |= {"read": 0.9 * one, "decode": 0.2 * one, "issue": 0.05 * one, "gemm": 0.3 * one, "ew": 0.1 * one}
    verdict = judge(t, Composition(prefetch=True, h2d_async=True, overlap=0.8))
    assert (verdict.resource, verdict.label) == ("storage", Bottleneck.IO)
    assert verdict.best == pytest.approx(0.9 / 0.4)
    t["read"] = 0.05 * one
    assert judge(t, Composition(prefetch=True, h2d_async=True, overlap=0.8)).label is Bottleneck.GPU
