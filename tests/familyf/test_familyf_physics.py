"""Family F's own physics: the step model's labels, counters as counters, and each class's look.

Every expectation here follows from family F's stage model (stages.py) and its exporters, never
from the project's analysis.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator_dev.familyf import FamilyFJob, generate_family_f
from bottleneck_operator_dev.familyf.boards import FABRICS
from bottleneck_operator_dev.familyf.design import draw_design
from bottleneck_operator_dev.familyf.scrape import Grid, Scrapes, scrape_times
from bottleneck_operator_dev.familyf.stages import Stages, gains, label_of

START = 1_800_000_000.0


def _stages(**kw: float) -> Stages:
    base = dict(read=0.1, decode=0.1, h2d=0.01, compute=1.0, hbm=0.1, comm=0.0, overlap=0.5, swap=0.0, fixed=0.01)
    return Stages(**(base | kw))


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, Bottleneck.GPU),
        ({"read": 2.0}, Bottleneck.IO),
        ({"decode": 2.0, "read": 1.5}, Bottleneck.CPU),
        ({"comm": 1.5}, Bottleneck.INTERCONNECT),
        ({"h2d": 1.3}, Bottleneck.INTERCONNECT),
        ({"hbm": 1.4}, Bottleneck.MEMORY),
        ({"swap": 1.2}, Bottleneck.MEMORY),
    ],
)
def test_the_label_is_the_stage_whose_removal_helps_most(kw: dict[str, float], expected: Bottleneck) -> None:
    stages = _stages(**kw)
    label, gain, runner = label_of(stages)
    assert label is expected and gain == max(gains(stages).values()) and gain >= runner


def test_communication_hidden_under_the_backward_pass_binds_nothing() -> None:
    stages = _stages(comm=0.45, overlap=0.5, h2d=0.0)
    assert stages.comm_exposed == 0.0 and gains(stages)[Bottleneck.INTERCONNECT] == 1.0
    assert label_of(stages)[0] is Bottleneck.GPU


def test_a_hidden_input_pipeline_gains_nothing_when_removed() -> None:
    stages = _stages(read=0.9, decode=0.8)
    assert gains(stages)[Bottleneck.IO] == 1.0 and gains(stages)[Bottleneck.CPU] == 1.0


def test_counters_only_grow_and_restart_from_zero() -> None:
    rng = np.random.default_rng(0)
    grid = Grid(START - 300.0, 5.0, 400)
    at = START + 30.0 * np.arange(40)
    times = scrape_times(rng, grid, 15.0, grid.t0 + 1.0, float(at[-1]), 0.02, None)
    scrapes = Scrapes(grid, times, 0.0, at, 30.0, 15.0)
    rate = np.vstack([np.full(grid.size, 3.0), rng.uniform(0.0, 5.0, grid.size)])
    when = START + 400.0
    values = scrapes.counter_values(rate, np.array([1e6, 5e5]), {1: when})
    steps = np.diff(values, axis=1)
    assert (steps[0] >= 0).all()
    drops = np.flatnonzero(steps[1] < 0)
    assert drops.size == 1 and times[drops[0] + 1] >= when > times[drops[0]]
    assert values[1, drops[0] + 1] < 5.0 * 30.0  # restarted near zero
    measured = scrapes.rate(values)
    assert np.nanmedian(np.abs(measured[0] - 3.0)) < 0.01  # rate() of a steady counter is the rate


@pytest.fixture(scope="module")
def jobs() -> list[FamilyFJob]:
    return generate_family_f(21, 150, start=START)


def _pod_mean(job: FamilyFJob, name: str) -> float:
    values = [np.nanmean(p.signals[name]) for p in job.window.pods if name in p.signals]
    return float(np.mean(values)) if values and np.isfinite(values).all() else float("nan")


def _class_mean(jobs: list[FamilyFJob], name: str, label: Bottleneck, mechanism: str | None = None) -> float:
    chosen = [_pod_mean(j, name) for j in jobs if j.label is label and mechanism in (None, j.mechanism)]
    return float(np.nanmean(chosen))


def test_gpus_of_input_bound_jobs_wait(jobs: list[FamilyFJob]) -> None:
    gpu = _class_mean(jobs, "gpu_util", Bottleneck.GPU)
    for label in (Bottleneck.IO, Bottleneck.CPU):
        assert _class_mean(jobs, "gpu_util", label) < gpu - 0.2


def test_host_memory_pressure_shows_in_pressure_and_faults(jobs: list[FamilyFJob]) -> None:
    for j in jobs:
        peak = max(
            (np.nanmax(p.signals["sc_psi_mem_some"]) for p in j.window.pods if "sc_psi_mem_some" in p.signals),
            default=None,
        )
        if peak is None:
            continue
        if j.mechanism == Mechanism.HOST_MEMORY_PRESSURE.value:
            assert peak > 0.02, j.name
        else:
            assert peak < 0.02, j.name
    pressured = _class_mean(jobs, "sc_majfault_ps", Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE.value)
    assert pressured > 10 * _class_mean(jobs, "sc_majfault_ps", Bottleneck.GPU)


def test_hbm_bound_jobs_keep_dram_busy_and_tensor_pipes_quiet(jobs: list[FamilyFJob]) -> None:
    hbm = Mechanism.HBM_BANDWIDTH.value
    assert _class_mean(jobs, "dram_active", Bottleneck.MEMORY, hbm) > _class_mean(jobs, "dram_active", Bottleneck.GPU)
    assert _class_mean(jobs, "tensor_active", Bottleneck.MEMORY, hbm) < _class_mean(
        jobs, "tensor_active", Bottleneck.GPU
    )


def test_throttled_cpu_jobs_are_throttled(jobs: list[FamilyFJob]) -> None:
    throttled = [_pod_mean(j, "cpu_throttled_frac") for j in jobs if j.mechanism == Mechanism.THROTTLED.value]
    others = [_pod_mean(j, "cpu_throttled_frac") for j in jobs if j.label is Bottleneck.GPU]
    assert np.nanmin(throttled) > np.nanmax(others)


def test_network_bound_jobs_fill_their_fabric(jobs: list[FamilyFJob]) -> None:
    capacity = {f.name: f.node_bps for f in FABRICS}

    def fill(j: FamilyFJob) -> float:
        fabric = next(t for t in j.tags if t in capacity)
        name = "ib_rx_bps" if any(p for p in j.window.pods if "ib_rx_bps" in p.signals) else "node_net_rx_bps"
        return _pod_mean(j, name) / capacity[fabric]

    network = [fill(j) for j in jobs if j.mechanism == Mechanism.NETWORK.value]
    multi_node_gpu = [fill(j) for j in jobs if j.label is Bottleneck.GPU and len(j.window.pods) > 1]
    assert np.nanmedian(network) > 2 * np.nanmedian(multi_node_gpu)


@pytest.mark.parametrize("target", list(CLASSES))
def test_every_draw_is_labelled_by_the_step_model(target: Bottleneck) -> None:
    for i in range(40):
        design = draw_design(np.random.default_rng((99, i)), target)
        label, gain, runner = label_of(design.stages)
        assert design.label is label is target and design.gain == gain > 1.0 and gain >= runner
        assert design.mechanism in MECHANISMS[label]


def test_borderline_jobs_have_a_close_runner_up() -> None:
    designs = [draw_design(np.random.default_rng((5, i)), c) for i in range(60) for c in CLASSES]
    hard = [d.gain / d.runner_up for d in designs if d.hard]
    easy = [d.gain / d.runner_up for d in designs if not d.hard]
    assert hard and np.median(hard) < np.median(easy)


def test_the_clock_is_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_clock() -> float:
        raise AssertionError("family F read the clock")

    monkeypatch.setattr(time, "time", no_clock)
    monkeypatch.setattr(time, "time_ns", no_clock)
    (job,) = generate_family_f(1, 1, start=START)
    assert job.window.start == START
