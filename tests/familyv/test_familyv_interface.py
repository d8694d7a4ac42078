"""Family V's interface: types, errors, determinism, balance, the grid and the contract's names."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow, families_and_coverage
from bottleneck_operator_dev.familyv import FamilyVJob, generate_family_v
from bottleneck_operator_dev.familyv.hardware import GPUS

START = 1_700_000_000.0


def test_jobs_have_the_fixed_shape(jobs: list[FamilyVJob]) -> None:
    for job in jobs:
        assert isinstance(job, FamilyVJob)
        assert isinstance(job.window, JobWindow)
        assert job.label in CLASSES
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]
        assert job.window.namespace == job.namespace and job.window.job == job.name
        assert all(isinstance(t, str) for t in job.tags)
    with pytest.raises(AttributeError):
        jobs[0].label = Bottleneck.GPU  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "word"), [({"n": -1}, "n"), ({"n": 2, "step": 0.0}, "step"), ({"n": 2, "step": -5.0}, "step")]
)
def test_bad_arguments_say_what_is_wrong(kwargs: dict[str, float], word: str) -> None:
    n = int(kwargs.pop("n"))
    with pytest.raises(ValueError, match=word):
        generate_family_v(seed=1, n=n, start=START, **kwargs)


def test_zero_jobs_is_an_empty_list() -> None:
    assert generate_family_v(seed=1, n=0, start=START) == []


def test_deterministic_and_independent_of_n() -> None:
    a = generate_family_v(seed=3, n=6, start=START)
    b = generate_family_v(seed=3, n=11, start=START)
    assert all(same_job(x, y) for x, y in zip(a, b[:6], strict=True))
    c = generate_family_v(seed=4, n=6, start=START)
    assert not all(same_job(x, y) for x, y in zip(a, c, strict=True))


def test_classes_balanced_and_shuffled(jobs: list[FamilyVJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) == 0  # 80 jobs: 16 each
    labels = [j.label for j in jobs]
    assert labels != [CLASSES[i % 5] for i in range(len(jobs))]  # not in a fixed cycle
    odd = Counter(j.label for j in jobs[:23])
    assert max(odd.values()) - min(odd.values()) <= 1


def test_both_memory_mechanisms_occur(jobs: list[FamilyVJob]) -> None:
    mechs = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert mechs == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}


@pytest.mark.parametrize("step", [30.0, 60.0, 15.0])
def test_grid_and_shapes(step: float) -> None:
    for job in generate_family_v(seed=2, n=3, start=START, step=step):
        w = job.window
        t = w.timestamps
        assert t[0] == START == w.start and t[-1] == w.end and w.step == step
        assert np.allclose(np.diff(t), step)
        assert t.size >= 20
        for pod in w.pods:
            assert pod.gpu_count >= 1 and pod.gpu_model in {g.model_name for g in GPUS}
            for values in pod.signals.values():
                assert values.shape == t.shape and values.dtype == np.float64


def test_contract_names_units_and_quality(jobs: list[FamilyVJob]) -> None:
    for job in jobs:
        fams, cov = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == fams and q.coverage == pytest.approx(cov)
        assert q.scrape_interval is not None and 10.0 <= q.scrape_interval <= 60.0
        assert cov > 0.8
        for pod in job.window.pods:
            for name, v in pod.signals.items():
                assert name in SIGNALS, name
                finite = v[np.isfinite(v)]
                if SIGNALS[name].unit == "ratio":
                    assert np.all((finite >= 0.0) & (finite <= 1.0)), name
                elif SIGNALS[name].unit in ("B/s", "1/s", "cores", "B", "W", "MHz", "procs"):
                    assert np.all(finite >= 0.0), name


def test_power_under_the_enforced_limit_and_clocks_under_the_maximum(jobs: list[FamilyVJob]) -> None:
    parts = {g.model_name: g for g in GPUS}
    for job in jobs:
        for pod in job.window.pods:
            assert pod.gpu_model is not None
            gpu = parts[pod.gpu_model]
            power = pod.signals["power_w"]
            assert np.nanmax(power) <= gpu.tdp
            if "power_limit_w" in pod.signals:
                ok = np.isfinite(power) & np.isfinite(pod.signals["power_limit_w"])
                assert np.all(power[ok] <= pod.signals["power_limit_w"][ok] + 1e-9)
            assert np.nanmax(pod.signals["sm_clock_mhz"]) <= gpu.max_clock


def test_no_clock_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> float:
        raise AssertionError("the family read the clock")

    monkeypatch.setattr(time, "time", boom)
    monkeypatch.setattr(time, "monotonic", boom)
    assert len(generate_family_v(seed=5, n=3, start=START)) == 3


def test_generation_is_fast() -> None:
    began = time.process_time()
    generate_family_v(seed=11, n=30, start=START)
    assert time.process_time() - began < 10.0  # 600 jobs take about 20 times this
