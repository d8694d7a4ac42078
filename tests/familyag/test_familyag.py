"""Family AG: interface, determinism, independence from n, balance, contract signals and physical sanity."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow, families_and_coverage
from bottleneck_operator_dev.familyag import FamilyAGJob, generate_family_ag
from bottleneck_operator_dev.familyag.exporters import cadvisor, node, sidecar
from bottleneck_operator_dev.familyag.generate import class_intent, draw_job, pod_context
from bottleneck_operator_dev.familyag.observe import SHORT_WINDOW, draw_observation
from bottleneck_operator_dev.familyag.stages import step_costs
from bottleneck_operator_dev.familyag.timeline import simulate

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
RATIO = {name for name, spec in SIGNALS.items() if spec.unit == "ratio"}
DRAWN = ("gpu:", "pods:", "fabric:", "storage:", "scrape:", "fields:", "workload:")


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAGJob]:
    return generate_family_ag(11, 15, start=START)


def test_interface(jobs: list[FamilyAGJob]) -> None:
    assert generate_family_ag(11, 0, start=START) == []
    assert len(jobs) == 15
    for job in jobs:
        assert isinstance(job, FamilyAGJob)
        assert isinstance(job.window, JobWindow)
        assert isinstance(job.label, Bottleneck)
        assert isinstance(job.tags, tuple) and all(isinstance(t, str) for t in job.tags)
        assert (job.window.namespace, job.window.job) == (job.namespace, job.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            job.name = "other"  # type: ignore[misc]
    assert len({job.name for job in jobs}) == len(jobs)


@pytest.mark.parametrize(("kwargs", "word"), [({"n": -1}, "n"), ({"step": 0.0}, "step"), ({"step": -30.0}, "step")])
def test_argument_errors(kwargs: dict[str, float], word: str) -> None:
    args: dict[str, float] = {"n": 2, "step": 30.0} | kwargs
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        generate_family_ag(3, int(args["n"]), start=START, step=args["step"])


def test_each_job_is_deterministic() -> None:
    first, again = generate_family_ag(4, 3, start=START), generate_family_ag(4, 3, start=START)
    assert all(same_job(a, b) for a, b in zip(first, again, strict=True))
    other = generate_family_ag(5, 3, start=START)
    assert not any(same_job(a, b) for a, b in zip(first, other, strict=True))


def test_a_job_does_not_depend_on_n() -> None:
    few, more = generate_family_ag(6, 2, start=START), generate_family_ag(6, 4, start=START)
    assert all(same_job(a, b) for a, b in zip(few, more[:2], strict=True))


def test_class_intents_are_balanced_blocks() -> None:
    for seed in (0, 1, 99):
        intents = [class_intent(seed, i) for i in range(50)]
        for b in range(10):
            assert sorted(intents[5 * b : 5 * b + 5]) == sorted(CLASSES)
    assert [class_intent(2, i) for i in range(10)] != [class_intent(3, i) for i in range(10)]


def test_labels_are_balanced(jobs: list[FamilyAGJob]) -> None:
    counts = Counter(job.label for job in jobs)
    assert set(counts) == set(CLASSES)
    assert all(2 <= counts[c] <= 5 for c in CLASSES), counts
    on_intent = sum(job.label is class_intent(11, i) for i, job in enumerate(jobs))
    assert on_intent >= 12


def test_labels_and_mechanisms(jobs: list[FamilyAGJob]) -> None:
    for job in jobs:
        assert job.label in CLASSES and job.label is not Bottleneck.UNKNOWN
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]


def test_signals_are_contract_signals(jobs: list[FamilyAGJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            assert set(pod.signals) <= set(SIGNALS)
            assert {"gpu_util", "power_w", "cpu_cores"} <= set(pod.signals)
        families, coverage = families_and_coverage(job.window.pods)
        assert job.window.quality.families == families
        assert job.window.quality.coverage == pytest.approx(coverage)
        assert 0.0 < coverage <= 1.0


def test_window_shapes(jobs: list[FamilyAGJob]) -> None:
    for job in jobs:
        w = job.window
        assert w.start == START and w.step == 30.0 and w.end > w.start
        assert w.timestamps[0] == START and w.timestamps[-1] <= w.end
        assert np.allclose(np.diff(w.timestamps), 30.0)
        assert len(w.pods) == int(next(t for t in job.tags if t.startswith("pods:")).split(":")[1])
        assert len({pod.node for pod in w.pods}) == len({pod.pod for pod in w.pods}) == len(w.pods)
        for pod in w.pods:
            assert pod.gpu_count >= 1 and pod.gpu_model and pod.node
            for values in pod.signals.values():
                assert values.shape == w.timestamps.shape and values.dtype == np.float64
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0


def test_tags_say_what_was_drawn(jobs: list[FamilyAGJob]) -> None:
    for job in jobs:
        for prefix in DRAWN:
            assert sum(t.startswith(prefix) for t in job.tags) == 1, (prefix, job.tags)
        assert ("too-short" in job.tags) == (job.window.duration < SHORT_WINDOW)
        assert not any(job.label.value in t.split(":")[-1] for t in job.tags if ":" in t and not t.startswith("model"))


def test_physical_sanity(jobs: list[FamilyAGJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                finite = values[np.isfinite(values)]
                assert np.all(finite >= 0.0), name
                if name in RATIO:
                    assert np.all(finite <= 1.0 + 1e-6), (name, finite.max())
            gpu = pod.signals["gpu_util"]
            assert np.isfinite(gpu).mean() > 0.5
            limit = pod.signals.get("power_limit_w")
            power = pod.signals["power_w"]
            assert np.nanmax(power) < 800.0
            if limit is not None:
                assert np.all(power[np.isfinite(power)] <= np.nanmax(limit) * 1.1)
            cpus = pod.signals.get("node_cpus")
            if cpus is not None:
                assert np.nanmin(pod.signals["cpu_cores"]) <= np.nanmax(cpus)


def _counters_of(samples: dict[str, np.ndarray], names: tuple[str, ...]) -> list[np.ndarray]:
    return [samples[n] for n in names if n in samples]


def test_counters_rise_except_at_a_drawn_reset() -> None:
    rng = np.random.default_rng((12, 0))
    sc, _ = draw_job(rng, Bottleneck.IO)
    obs = draw_observation(rng, sc)
    obs = dataclasses.replace(obs, resets=(("node", obs.duration * 0.5),), gaps=(), duration=max(obs.duration, 900.0))
    costs = step_costs(sc)
    ctx = pod_context(rng, sc, obs, simulate(costs, sc.gpus_per_pod, record=True), costs, 0, START)
    steady = [(cadvisor(rng, ctx).values, ("cpu", "fs_rd", "throttled", "periods"))]
    steady.append((sidecar(rng, ctx).values, ("psi_cpu", "psi_io", "cpu", "majflt", "pod_rx")))
    for values, names in steady:
        for series in _counters_of(values, names):
            assert np.all(np.diff(series) >= 0.0)
    restarted = node(rng, ctx)
    drops = {
        int(np.argmax(np.diff(s) < 0))
        for s in _counters_of(restarted.values, ("n_busy", "n_sys", "n_rx"))
        if np.any(np.diff(s) < 0)
    }
    assert len(drops) == 1
    (at,) = drops
    assert restarted.times[at + 1] >= START + obs.duration * 0.5 > restarted.times[at]
    for s in _counters_of(restarted.values, ("n_busy", "n_sys", "n_rx", "n_majflt")):
        d = np.diff(s)
        assert np.all(np.delete(d, at) >= 0.0)
