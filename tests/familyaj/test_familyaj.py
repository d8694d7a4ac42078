"""Family AJ: interface, determinism, independence from n, balance, the signal contract, physics."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck
from bottleneck_operator.contract.window import JobWindow, families_and_coverage
from bottleneck_operator_dev.familyaj import FamilyAJJob, generate_family_aj
from bottleneck_operator_dev.familyaj.hardware import GPUS, NODE_KINDS
from bottleneck_operator_dev.familyaj.scrape import Timeline, counter_samples

START = 1767225600.0
SEED = 20260417
PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "bottleneck_operator_dev" / "familyaj"


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAJJob]:
    return generate_family_aj(SEED, 60, start=START)


def test_interface(jobs: list[FamilyAJJob]) -> None:
    assert len(jobs) == 60
    for job in jobs:
        assert isinstance(job, FamilyAJJob)
        assert dataclasses.is_dataclass(job) and type(job).__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert job.label in CLASSES and job.label is not Bottleneck.UNKNOWN
        assert job.mechanism in {m.value for m in MECHANISMS[job.label]}
        assert isinstance(job.tags, tuple) and all(isinstance(t, str) for t in job.tags)
        assert isinstance(job.window, JobWindow)
        assert (job.window.namespace, job.window.job) == (job.namespace, job.name)
    assert len({(j.namespace, j.name) for j in jobs}) == len(jobs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        jobs[0].name = "x"  # type: ignore[misc]


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="n"):
        generate_family_aj(1, -1, start=START)
    for bad in (0.0, -30.0):
        with pytest.raises(ValueError, match="step"):
            generate_family_aj(1, 2, start=START, step=bad)
    assert generate_family_aj(1, 0, start=START) == []


def test_deterministic(jobs: list[FamilyAJJob]) -> None:
    again = generate_family_aj(SEED, 12, start=START)
    assert all(same_job(a, b) for a, b in zip(jobs[:12], again, strict=True))
    other = generate_family_aj(SEED + 1, 12, start=START)
    assert not all(same_job(a, b) for a, b in zip(jobs[:12], other, strict=True))


def test_independent_of_n(jobs: list[FamilyAJJob]) -> None:
    few = generate_family_aj(SEED, 4, start=START)
    assert all(same_job(a, b) for a, b in zip(few, jobs[:4], strict=True))


def test_classes_balanced(jobs: list[FamilyAJJob]) -> None:
    for block in range(len(jobs) // 5):
        labels = {j.label for j in jobs[5 * block : 5 * block + 5]}
        assert labels == set(CLASSES), block


def test_tags_never_name_the_class(jobs: list[FamilyAJJob]) -> None:
    words = {c.value.lower() for c in Bottleneck} | {m.value for ms in MECHANISMS.values() for m in ms}
    for job in jobs:
        for tag in job.tags:
            assert tag.lower() not in words
            assert tag.split(":", 1)[-1].lower() not in words


def test_window_grid_and_quality(jobs: list[FamilyAJJob]) -> None:
    for job in jobs:
        w = job.window
        assert w.step == 30.0 and w.timestamps[0] == START
        assert np.allclose(np.diff(w.timestamps), 30.0)
        assert w.start == w.timestamps[0] and w.end == w.timestamps[-1]
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert len({p.node for p in w.pods}) == len(w.pods)
        for pod in w.pods:
            assert pod.gpu_model in {g.model_name for g in GPUS.values()}
            assert pod.gpu_count >= 1
            for values in pod.signals.values():
                assert values.shape == w.timestamps.shape


def test_some_too_short_and_long_ones() -> None:
    many = generate_family_aj(SEED, 100, start=START, step=15.0)
    short = [j for j in many if "too-short" in j.tags]
    assert short and all(j.window.duration <= 150.0 for j in short)
    assert max(j.window.duration for j in many) >= 1800.0


def test_signals_are_contract_names_in_range(jobs: list[FamilyAJJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                assert name in SIGNALS, name
                v = values[np.isfinite(values)]
                assert (v >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (v <= 1.0).all(), name
                if name == "sm_clock_mhz":
                    assert (v <= 2600).all()


def _cap(values: np.ndarray, limit: float) -> bool:
    v = values[np.isfinite(values)]
    return bool((v <= limit).all())


def test_bytes_within_link_capacity(jobs: list[FamilyAJJob]) -> None:
    slack = 1.25  # rate() extrapolation and per-sample noise
    for job in jobs:
        kind = NODE_KINDS[next(t for t in job.tags if t.startswith("node-kind:")).split(":", 1)[1]]
        gpu = GPUS[kind.gpu]
        for pod in job.window.pods:
            s = pod.signals
            assert _cap(s["pcie_rx_bps"], gpu.pcie_bps * slack) if "pcie_rx_bps" in s else True
            assert _cap(s["pcie_tx_bps"], gpu.pcie_bps * slack) if "pcie_tx_bps" in s else True
            assert _cap(s["nvlink_total_bps"], 2 * gpu.nvlink_bps * slack)
            assert _cap(s["node_disk_read_bps"], kind.disk_bps * slack)
            assert _cap(s["node_net_rx_bps"], kind.eth_bps * slack)
            if "ib_rx_bps" in s:
                assert _cap(s["ib_rx_bps"], kind.nic_bps * slack)
            assert _cap(s["cpu_cores"], kind.cpus * slack)
            if "cpu_limit_cores" in s:
                limit = np.nanmax(s["cpu_limit_cores"])
                assert _cap(s["cpu_cores"], limit * slack)
            assert _cap(s["power_w"], gpu.tdp_w * 1.1)


def test_counters_monotone_except_resets() -> None:
    rng = np.random.default_rng(3)
    tl = Timeline(np.array([-100.0, 400.0, 1000.0]), None, ())
    times = np.arange(0.0, 900.0, 15.0)
    rates = np.array([[5.0, 9.0, 0.0, 0.0], [1e9, 2e9, 0.0, 0.0]])
    plain = counter_samples(rng, rates, times, tl, 0.1, np.array([1e6, 1e12]), None)
    assert (np.diff(plain, axis=1) >= 0).all()
    reset = counter_samples(rng, rates, times, tl, 0.1, np.array([1e6, 1e12]), 450.0)
    drops = np.diff(reset, axis=1) < 0
    assert drops.sum(axis=1).tolist() == [1, 1]
    assert np.flatnonzero(drops[0])[0] + 1 == int(np.argmax(times >= 450.0))


def test_rates_of_reset_counters_stay_sane() -> None:
    reset = [j for j in generate_family_aj(SEED, 40, start=START) if "counter-reset" in j.tags]
    assert reset
    for job in reset:
        for pod in job.window.pods:
            for name in ("cpu_cores", "sc_cpu_cores", "fs_read_bps", "sc_io_read_bps"):
                v = pod.signals[name][np.isfinite(pod.signals[name])] if name in pod.signals else np.zeros(0)
                assert (v >= 0).all() and (v < 1e12).all(), name


def test_imports_numpy_stdlib_and_contract_only() -> None:
    allowed = ("numpy", "bottleneck_operator.contract", "bottleneck_operator_dev.familyaj", "__future__")
    stdlib = {"dataclasses", "collections", "typing", "enum", "math"}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            else:
                continue
            for mod in mods:
                assert mod.split(".")[0] in stdlib or mod.startswith(allowed), (path.name, mod)
