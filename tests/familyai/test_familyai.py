"""Family AI: interface, determinism, balance, the signal contract and physical sanity."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyai import FamilyAIJob, generate_family_ai
from bottleneck_operator_dev.familyai.exporters import Reader, Scrapes
from bottleneck_operator_dev.familyai.hardware import GPUS, PCIE_BW
from bottleneck_operator_dev.familyai.timeline import DT

SEED = 20261202
START = 1767225600.0
N = 25


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAIJob]:
    return generate_family_ai(SEED, N, start=START)


def test_interface(jobs: list[FamilyAIJob]) -> None:
    assert len(jobs) == N
    fields = [f.name for f in dataclasses.fields(FamilyAIJob)]
    assert fields == ["namespace", "name", "label", "mechanism", "tags", "window"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        jobs[0].name = "x"  # type: ignore[misc]
    for job in jobs:
        assert isinstance(job.window, JobWindow)
        assert (job.namespace, job.name) == (job.window.namespace, job.window.job)
        assert isinstance(job.tags, tuple) and all(isinstance(t, str) for t in job.tags)
    assert len({j.name for j in jobs}) == N
    assert generate_family_ai(SEED, 0, start=START) == []


@pytest.mark.parametrize(("kwargs", "word"), [({"n": -1}, "n"), ({"step": 0.0}, "step"), ({"step": -5.0}, "step")])
def test_argument_errors(kwargs: dict[str, float], word: str) -> None:
    args: dict[str, float] = {"n": 2, "step": 30.0} | kwargs
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        generate_family_ai(SEED, int(args["n"]), start=START, step=args["step"])


def test_deterministic(jobs: list[FamilyAIJob]) -> None:
    again = generate_family_ai(SEED, N, start=START)
    assert all(same_job(a, b) for a, b in zip(jobs, again, strict=True))
    other = generate_family_ai(SEED + 1, 3, start=START)
    assert not all(same_job(a, b) for a, b in zip(jobs[:3], other, strict=True))


def test_job_depends_on_seed_and_index_only(jobs: list[FamilyAIJob]) -> None:
    few = generate_family_ai(SEED, 7, start=START)
    assert all(same_job(a, b) for a, b in zip(few, jobs[:7], strict=True))


def test_balanced_blocks(jobs: list[FamilyAIJob]) -> None:
    for b in range(N // 5):
        assert sorted(j.label.value for j in jobs[5 * b : 5 * b + 5]) == sorted(c.value for c in CLASSES)


def test_labels_and_mechanisms(jobs: list[FamilyAIJob]) -> None:
    for job in jobs:
        assert job.label in CLASSES and job.label is not Bottleneck.UNKNOWN
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]


def test_tags_never_name_the_class(jobs: list[FamilyAIJob]) -> None:
    classes = {c.value.lower() for c in Bottleneck}
    mechanisms = {m.value for m in Mechanism}
    for job in jobs:
        for tag in job.tags:
            tokens = {t for part in tag.lower().split(":") for t in part.split("-")} | set(tag.lower().split(":"))
            assert not tokens & classes, tag
            assert not set(tag.lower().split(":")) & mechanisms, tag


def test_window_grid(jobs: list[FamilyAIJob]) -> None:
    for job in jobs:
        w = job.window
        assert w.step == 30.0 and w.start == START and w.end == w.timestamps[-1]
        assert np.allclose(np.diff(w.timestamps), w.step)
        assert w.duration <= 3600.0
        assert ("too-short" in job.tags) == (w.duration < 120.0)
        assert w.pods and all(p.gpu_count >= 1 and p.gpu_model for p in w.pods)
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0
        assert (w.quality.families, w.quality.coverage) == families_and_coverage(w.pods)


def test_a_few_jobs_are_too_short() -> None:
    found = next((j for j in (generate_family_ai(7, 80, start=START)) if "too-short" in j.tags), None)
    assert found is not None
    assert found.window.timestamps.size <= 4


RATIO_SLACK = 1e-9


def test_signals_follow_the_contract(jobs: list[FamilyAIJob]) -> None:
    for job in jobs:
        m = job.window.timestamps.size
        for pod in job.window.pods:
            assert isinstance(pod.signals, SignalBlock)
            for name, values in pod.signals.items():
                assert name in SIGNALS, name
                assert values.dtype == np.float64 and values.shape == (m,)
                v = values[np.isfinite(values)]
                unit = SIGNALS[name].unit
                assert (v >= 0).all(), name
                if unit == "ratio":
                    assert (v <= 1 + RATIO_SLACK).all(), name
                if SIGNALS[name].kind is Kind.COUNTER:
                    assert np.isfinite(v).all(), name


def test_gpu_signals_are_physical(jobs: list[FamilyAIJob]) -> None:
    specs = {g.model_name: g for g in GPUS}
    for job in jobs:
        for pod in job.window.pods:
            gpu = specs[str(pod.gpu_model)]
            s = pod.signals
            assert np.nanmax(s["power_w"], initial=0) <= gpu.tdp_w * 1.001
            assert np.nanmax(s["sm_clock_mhz"], initial=0) <= gpu.boost_mhz + 1e-6
            if "power_limit_w" in s and np.isfinite(s["power_limit_w"]).any():
                assert np.nanmax(s["power_w"], initial=0) <= np.nanmax(s["power_limit_w"]) + 1e-6
            for key in ("pcie_rx_bps", "pcie_tx_bps"):
                if key in s:
                    assert np.nanmax(s[key], initial=0) <= PCIE_BW[gpu.pcie_gen]
            if gpu.nvlink_bw == 0:
                assert np.nanmax(s["nvlink_total_bps"], initial=0) == 0
            assert np.nanmax(s["nvlink_total_bps"], initial=0) <= gpu.nvlink_bw
            for key in ("nvlink_tx_bps", "nvlink_rx_bps"):
                if key in s:
                    assert np.nanmax(s[key], initial=0) <= gpu.nvlink_bw / 2
            if "sm_active" in s and "tensor_active" in s and np.isfinite(s["sm_active"]).any():
                assert np.nanmean(s["tensor_active"]) <= np.nanmean(s["sm_active"]) + 0.05


def test_host_signals_are_physical(jobs: list[FamilyAIJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            s = pod.signals
            if "node_cpus" in s and np.isfinite(s["node_cpus"]).any():
                cpus = float(np.nanmax(s["node_cpus"]))
                assert cpus >= 16
                if "cpu_cores" in s:
                    assert np.nanmax(s["cpu_cores"], initial=0) <= cpus * 1.05
            if "cpu_limit_cores" in s and "cpu_cores" in s and np.isfinite(s["cpu_limit_cores"]).any():
                assert np.nanmax(s["cpu_cores"], initial=0) <= np.nanmax(s["cpu_limit_cores"]) * 1.1
            if "mem_limit_bytes" in s and np.isfinite(s["mem_limit_bytes"]).any():
                assert (
                    np.nanmax(s.get("mem_working_set_bytes", [0.0]), initial=0)
                    <= np.nanmax(s["mem_limit_bytes"]) * 1.05
                )
            busy = s.get("node_cpu_busy_frac")
            wait = s.get("node_cpu_iowait_frac")
            if busy is not None and wait is not None:
                assert np.nanmax(busy + wait, initial=0) <= 1 + 1e-9
            for key in ("ib_rx_bps", "ib_tx_bps"):
                if key in s:
                    assert np.nanmax(s[key], initial=0) <= 8 * 400e9 / 8
            for key in ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy"):
                if key in s:
                    v = s[key][np.isfinite(s[key])]
                    assert np.array_equal(v, np.round(v)), key


def test_counters_integrate_and_resets_are_undone() -> None:
    grid = np.arange(0.0, 1200.0 + DT, DT)
    times = np.arange(3.0, 1200.0, 15.0)
    at = np.arange(300.0, 1200.0, 30.0)
    reader = Reader(grid, Scrapes(times, 15.0), at, 30.0)
    rate = np.full(grid.size, 123.0)
    clean = reader.counter(rate, start=1e6)
    reset = reader.counter(rate, (611.0,), start=1e6)
    assert np.allclose(clean, 123.0, rtol=1e-6)
    assert np.nanmin(reset) >= 0 and np.nanmedian(reset) == pytest.approx(123.0, rel=1e-3)
    assert math.isclose(float(np.nanmean(reader.gauge(np.full(grid.size, 7.0)))), 7.0)
