"""Family AH: interface, determinism, balance and the physical sanity of its windows."""

from __future__ import annotations

from collections import Counter
from functools import cache

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow, families_and_coverage
from bottleneck_operator_dev.familyah import FamilyAHJob, generate_family_ah
from bottleneck_operator_dev.familyah.scrape import counter_series

START = 1_700_000_000.0


@cache
def _jobs(seed: int, n: int) -> tuple[FamilyAHJob, ...]:
    return tuple(generate_family_ah(seed, n, start=START))


def test_interface_and_shapes() -> None:
    jobs = _jobs(3, 60)
    assert len(jobs) == 60 and generate_family_ah(3, 0, start=START) == []
    for job in jobs:
        w = job.window
        assert isinstance(w, JobWindow) and (w.namespace, w.job) == (job.namespace, job.name)
        assert w.step == 30.0 and w.timestamps[0] == START == w.start and w.timestamps[-1] == w.end
        assert np.allclose(np.diff(w.timestamps), 30.0)
        assert w.pods and all(p.gpu_count >= 1 and p.gpu_model for p in w.pods)
        for pod in w.pods:
            assert all(v.shape == w.timestamps.shape and v.dtype == np.float64 for v in pod.signals.values())
        families, coverage = families_and_coverage(w.pods)
        assert (w.quality.families, w.quality.coverage) == (families, coverage)
        assert w.quality.scrape_interval is not None and 5 <= w.quality.scrape_interval <= 60


@pytest.mark.parametrize(("kwargs", "word"), [({"n": -1}, "n"), ({"step": 0.0}, "step"), ({"step": -5.0}, "step")])
def test_argument_errors(kwargs: dict[str, float], word: str) -> None:
    args: dict[str, float] = {"n": 2, "step": 30.0, **kwargs}
    with pytest.raises(ValueError, match=word):
        generate_family_ah(1, int(args["n"]), start=START, step=args["step"])


def test_determinism_and_independence_from_n() -> None:
    a, b = generate_family_ah(7, 12, start=START), generate_family_ah(7, 12, start=START)
    assert all(same_job(x, y) for x, y in zip(a, b, strict=True))
    longer = generate_family_ah(7, 23, start=START)
    assert all(same_job(x, y) for x, y in zip(a, longer, strict=False))
    other = generate_family_ah(8, 12, start=START)
    assert not all(same_job(x, y) for x, y in zip(a, other, strict=True))


def test_classes_balanced_and_mechanisms_of_their_class() -> None:
    jobs = _jobs(1, 100)
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES) and Bottleneck.UNKNOWN not in counts
    assert all(14 <= counts[c] <= 26 for c in CLASSES)
    for job in jobs:
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]


def test_tags_say_what_was_drawn() -> None:
    for job in _jobs(3, 60):
        prefixes = {t.split(":", 1)[0] for t in job.tags}
        assert {"gpu", "pods", "fabric", "storage", "scrape", "fields"} <= prefixes
        values = {t.split(":", 1)[-1].lower() for t in job.tags}
        assert not values & {c.value.lower() for c in Bottleneck} and not values & {m.value for m in Mechanism}
        assert ("too-short" in job.tags) == (job.window.duration < 300)


def test_signals_are_contract_signals_and_physical() -> None:
    for job in _jobs(3, 60):
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                spec = SIGNALS[name]
                finite = values[np.isfinite(values)]
                assert (finite >= 0).all(), name
                if spec.unit == "ratio":
                    assert (finite <= 1.0).all(), name
            assert "gpu_util" in pod.signals


def test_counters_monotone_except_resets() -> None:
    inc = np.random.default_rng(0).uniform(0, 5, (3, 50))
    plain = counter_series(inc, 100.0, [])
    assert (np.diff(plain, axis=-1) >= 0).all() and np.allclose(plain[:, 0], 100.0 + inc[:, 0])
    reset = counter_series(inc, 100.0, [20, 35])
    drops = np.flatnonzero((np.diff(reset, axis=-1) < 0).any(axis=0)) + 1
    assert list(drops) == [20, 35] and np.allclose(reset[:, 20], inc[:, 20])


def test_dev_only_jobs_lack_prof_signals() -> None:
    for job in _jobs(3, 60):
        if "fields:dev" in job.tags:
            assert all("tensor_active" not in p.signals for p in job.window.pods)
