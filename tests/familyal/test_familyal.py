"""Family AL: determinism, the interface, the windows' contract, and the counterfactual labelling."""

from __future__ import annotations

import dataclasses
from collections import Counter
from functools import cache

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyal import FamilyALJob, generate_family_al
from bottleneck_operator_dev.familyal.costs import Costs
from bottleneck_operator_dev.familyal.job import Trace, intent_of, simulate_job
from bottleneck_operator_dev.familyal.label import label_costs
from bottleneck_operator_dev.familyal.observe import SHORT_SAMPLES
from bottleneck_operator_dev.familyal.steps import run

SEED = 11
B, M = Bottleneck, Mechanism


@cache
def _traced(n: int) -> tuple[tuple[FamilyALJob, Trace], ...]:
    return tuple(simulate_job(SEED, i) for i in range(n))


def _same_window(a: FamilyALJob, b: FamilyALJob) -> bool:
    wa, wb = a.window, b.window
    if (wa.namespace, wa.job, wa.start, wa.end, wa.quality) != (wb.namespace, wb.job, wb.start, wb.end, wb.quality):
        return False
    for pa, pb in zip(wa.pods, wb.pods, strict=True):
        if set(pa.signals) != set(pb.signals):
            return False
        if not all(np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True) for k in pa.signals):
            return False
    return True


def test_same_seed_same_jobs() -> None:
    a, b = generate_family_al(SEED, 6), generate_family_al(SEED, 6)
    assert [(j.name, j.label, j.mechanism, j.tags) for j in a] == [(j.name, j.label, j.mechanism, j.tags) for j in b]
    assert all(_same_window(x, y) for x, y in zip(a, b, strict=True))
    other = generate_family_al(SEED + 1, 6)
    assert [j.name for j in other] != [j.name for j in a]


def test_job_i_does_not_depend_on_n() -> None:
    few, many = generate_family_al(SEED, 3), generate_family_al(SEED, 9)
    assert all(_same_window(x, y) and x.tags == y.tags for x, y in zip(few, many[:3], strict=True))


@pytest.mark.parametrize(
    ("kwargs", "word"), [({"n": -1}, "n"), ({"n": 2, "step": 0.0}, "step"), ({"n": 2, "step": -5.0}, "step")]
)
def test_bad_arguments_raise(kwargs: dict[str, float], word: str) -> None:
    with pytest.raises(ValueError, match=rf"^{word} must"):
        generate_family_al(SEED, **kwargs)  # type: ignore[arg-type]
    assert generate_family_al(SEED, 0) == []


def test_intents_are_balanced_and_labels_spread() -> None:
    intents = Counter(intent_of(SEED, i) for i in range(100))
    assert all(intents[c] == 20 for c in CLASSES)
    labels = Counter(job.label for job, _ in _traced(100))
    assert set(labels) == set(CLASSES)
    assert all(labels[c] >= 8 for c in CLASSES), labels
    agree = sum(job.label is tr.intent for job, tr in _traced(100))
    assert agree >= 55, agree


def test_labels_mechanisms_and_job_fields() -> None:
    for job, _ in _traced(60):
        assert job.label in CLASSES and job.label is not B.UNKNOWN
        assert job.mechanism in MECHANISMS[job.label]
        assert job.window.namespace == job.namespace and job.window.job == job.name
        assert any(t.startswith("intent:") for t in job.tags)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.label = B.GPU  # type: ignore[misc]


def test_windows_use_contract_signals_with_consistent_shapes() -> None:
    for job, tr in _traced(40):
        w = job.window
        assert np.allclose(np.diff(w.timestamps), w.step) and w.timestamps[0] == w.start and w.timestamps[-1] == w.end
        assert len(w.pods) == tr.setup.cluster.pods
        for pod in w.pods:
            assert set(pod.signals) <= set(SIGNALS), set(pod.signals) - set(SIGNALS)
            assert all(v.shape == w.timestamps.shape for v in pod.signals.values())
            assert pod.gpu_count == tr.setup.cluster.gpus and pod.gpu_model == tr.setup.cluster.board.model_name
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0


def _contract_metrics() -> set[str]:
    return {m for spec in SIGNALS.values() for m in (*spec.metrics, *spec.alternates)}


def test_exported_series_use_contract_metric_names() -> None:
    known = _contract_metrics()
    for _, tr in _traced(30):
        for pod in tr.series:
            for series in pod.values():
                for key in (*series.gauges, *series.counters):
                    assert key.split("{")[0] in known, key


def test_counters_are_monotone_outside_drawn_resets() -> None:
    resets_seen = 0
    for _, tr in _traced(60):
        for pod in tr.series:
            for series in pod.values():
                assert np.all(np.diff(series.times) > 0)
                after = series.times[1:] >= series.reset_at if series.reset_at is not None else np.zeros(0, bool)
                crossing = np.diff(after.astype(int), prepend=0) == 1 if after.size else None
                for values in series.counters.values():
                    drops = np.diff(values) < 0
                    if crossing is not None:
                        resets_seen += int(drops[crossing].any())
                        drops = drops & ~crossing
                    assert not drops.any()
    assert resets_seen > 0


def test_counter_signals_are_non_negative_rates() -> None:
    for job, _ in _traced(40):
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                if SIGNALS[name].kind is Kind.COUNTER:
                    finite = values[np.isfinite(values)]
                    assert np.all(finite >= -1e-9), name


def test_dev_only_jobs_carry_no_profiling_fields() -> None:
    prof = {Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES}
    dev_only = [job for job, _ in _traced(60) if "dcgm:dev-only" in job.tags]
    assert dev_only
    for job in dev_only:
        assert not (job.window.quality.families & prof)
        for pod in job.window.pods:
            assert not any(SIGNALS[n].family in prof for n in pod.signals)
            assert "gpu_util" in pod.signals


def test_too_short_jobs_exist_and_are_tagged() -> None:
    jobs = [job for job, _ in _traced(100)]
    short = [j for j in jobs if "too-short" in j.tags]
    assert 1 <= len(short) <= 15
    for j in jobs:
        si = max(j.window.step, j.window.quality.scrape_interval or 0.0)
        samples = j.window.duration / si
        assert (samples < SHORT_SAMPLES) if j in short else (samples >= SHORT_SAMPLES)


def _costs(k: int = 40, r: int = 4, **over: float) -> Costs:
    """A hand-built Job: every stage small unless overridden (per iteration, every rank)."""
    base: dict[str, float] = {
        "decode": 0.01,
        "io_latency": 0.0,
        "io_xfer": 0.0,
        "storage_bound": 0.0,
        "read_bytes": 0.0,
        "cores": 8.0,
        "cores_nolimit": 8.0,
        "loader_mem": 0.0,
        "h2d": 0.0,
        "h2d_bytes": 0.0,
        "t_compute": 0.1,
        "t_hbm": 0.02,
        "launch": 0.005,
        "launch_penalty": 0.0,
        "main_mem": 0.0,
        "oom": 0.0,
        "gc": 0.0,
        "clock": 1.0,
        "noisy": 0.0,
    }
    per_iter = {"comm_nvlink": 0.0, "comm_pcie": 0.0, "comm_net": 0.0, "ckpt": 0.0, "congested": 0.0}
    base |= {k2: v for k2, v in over.items() if k2 in base}
    per_iter |= {k2: v for k2, v in over.items() if k2 in per_iter}
    return Costs(
        **{name: np.full((k, r), v) for name, v in base.items()},
        **{name: np.full(k, v) for name, v in per_iter.items()},
        workers=int(over.get("workers", 4)),
        queue=4,
        intra_bytes=0.0,
        inter_bytes=0.0,
        comm_overlap=float(over.get("comm_overlap", 0.0)),
    )


@pytest.mark.parametrize(
    ("over", "limit", "remote", "label", "mechanism"),
    [
        ({}, False, False, B.GPU, M.COMPUTE),
        ({"launch": 0.4}, False, False, B.GPU, M.LAUNCH_BOUND),
        ({"io_latency": 2.0, "storage_bound": 0.3}, False, True, B.IO, M.NETWORK_STORAGE),
        ({"storage_bound": 0.6}, False, False, B.IO, M.LOCAL_DISK),
        ({"decode": 4.0, "cores": 2.0, "cores_nolimit": 32.0, "workers": 16}, True, False, B.CPU, M.THROTTLED),
        ({"decode": 4.0, "cores": 2.0, "cores_nolimit": 2.0, "workers": 16}, False, False, B.CPU, M.SATURATED),
        ({"decode": 1.0, "workers": 1, "cores": 16.0, "cores_nolimit": 16.0}, False, False, B.CPU, M.TOO_FEW_WORKERS),
        ({"comm_net": 0.5}, False, False, B.INTERCONNECT, M.NETWORK),
        ({"comm_nvlink": 0.5}, False, False, B.INTERCONNECT, M.NVLINK),
        ({"h2d": 0.5}, False, False, B.INTERCONNECT, M.PCIE),
        ({"t_hbm": 0.5}, False, False, B.MEMORY, M.HBM_BANDWIDTH),
        ({"main_mem": 0.5}, False, False, B.MEMORY, M.HOST_MEMORY_PRESSURE),
    ],
)
def test_counterfactual_label_on_hand_built_jobs(
    over: dict[str, float], limit: bool, remote: bool, label: Bottleneck, mechanism: Mechanism
) -> None:
    lab = label_costs(_costs(**over), network_storage=remote, has_limit=limit)
    assert (lab.label, lab.mechanism) == (label, mechanism), lab.speedups
    assert not lab.hard
    assert lab.speedups[label] == max(lab.speedups.values())


def test_step_is_the_slowest_rank_and_close_calls_are_hard() -> None:
    c = _costs()
    c.t_compute[:, 2] = 0.3  # one straggling rank
    base = run(c)
    assert np.allclose(base.step, 0.32)
    close = label_costs(_costs(t_compute=0.1, t_hbm=0.095), network_storage=False, has_limit=False)
    assert close.hard and close.label in (B.GPU, B.MEMORY)


def test_overlap_hides_comm_under_backward() -> None:
    hidden = run(_costs(comm_net=0.05, comm_overlap=0.9))
    exposed = run(_costs(comm_net=0.05, comm_overlap=0.0))
    assert hidden.mean == pytest.approx(0.12) and exposed.mean == pytest.approx(0.17)
