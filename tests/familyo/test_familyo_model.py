"""Family O's own step model and exporters: labels from stage removal, counters that count, physics per class."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator_dev.familyo import FamilyOJob, generate_family_o
from bottleneck_operator_dev.familyo.exporters import Scrape, counter_values, gauge, rate
from bottleneck_operator_dev.familyo.stepmodel import Stages, label_of, raise_until
from bottleneck_operator_dev.familyo.workload import draw_plan

HEALTHY = Stages(
    read=0.2, cpu=0.3, h2d=0.01, math=1.0, hbm=0.4, launch=0.05, intra=0.1, inter=0.2, overlap=0.8, swap=0.0
)


def test_a_healthy_step_is_gpu_bound_and_each_stage_can_take_over() -> None:
    assert label_of(HEALTHY) is Bottleneck.GPU
    assert label_of(replace(HEALTHY, read=1.5)) is Bottleneck.IO
    assert label_of(replace(HEALTHY, cpu=1.5)) is Bottleneck.CPU
    assert label_of(replace(HEALTHY, inter=3.0, overlap=0.0)) is Bottleneck.INTERCONNECT
    assert label_of(replace(HEALTHY, hbm=2.0)) is Bottleneck.MEMORY
    assert label_of(replace(HEALTHY, swap=2.0)) is Bottleneck.MEMORY


def test_overlap_hides_communication() -> None:
    exposed = replace(HEALTHY, inter=0.8, overlap=0.0)
    hidden = replace(HEALTHY, inter=0.8, overlap=0.95)
    assert exposed.step > hidden.step and hidden.comm_exposed == 0.0


def test_a_stall_the_input_pipeline_hides_is_not_the_label() -> None:
    # The input is the bound: a GPU-side change that stays under it saves nothing.
    io_bound = replace(HEALTHY, read=3.0)
    assert io_bound.gain(Bottleneck.GPU) == pytest.approx(0.0)
    assert io_bound.gain(Bottleneck.IO) > 0


def test_raise_until_reaches_the_strength_and_the_label() -> None:
    base = replace(HEALTHY, cpu=0.0)
    grown = raise_until(base, "cpu", Bottleneck.CPU, 1.1)
    assert label_of(grown) is Bottleneck.CPU and grown.strength(Bottleneck.CPU) >= 1.1
    assert grown.strength(Bottleneck.CPU) < 1.2  # grown in small steps: barely-there bottlenecks exist


@pytest.mark.parametrize("cls", CLASSES)
def test_drawn_plans_are_labelled_by_the_largest_removal_gain(cls: Bottleneck) -> None:
    for k in range(60):
        rng = np.random.default_rng([99, k])
        hint = ("host-memory-pressure", "hbm-bandwidth")[k % 2]
        plan = draw_plan(rng, cls, hint)
        gains = {c: plan.stages.gain(c) for c in CLASSES}
        assert plan.label is cls and max(gains, key=lambda c: gains[c]) is cls
        assert plan.strength >= 1.05
        if cls is Bottleneck.MEMORY:
            assert plan.mechanism == hint


def test_strengths_span_barely_there_to_overwhelming() -> None:
    jobs = generate_family_o(21, 100, start=0.0)
    strengths = [float(t.split(":")[1]) for j in jobs for t in j.tags if t.startswith("strength:")]
    assert len(strengths) == 100
    assert min(strengths) < 1.2 and max(strengths) > 3.0


def test_counters_are_monotone_between_resets_and_rate_reads_them_back() -> None:
    truth = np.vstack([np.full(40, 5.0), np.linspace(1.0, 9.0, 40)])
    sc = Scrape(interval=15.0, offset=4.0, collect=0.0, down=(600.0, 640.0), warm=True)
    at = np.arange(-30.0, 40 * 30.0, 15.0)
    values = counter_values(truth, 30.0, sc, np.array([1e6, 5e3]), at)
    before, after = values[:, at < 640.0], values[:, at >= 640.0]
    assert (np.diff(before, axis=1) >= 0).all() and (np.diff(after, axis=1) >= 0).all()
    assert (after[:, 0] < before[:, -1]).all()  # the restart is a reset
    rates = rate(truth, 30.0, sc, np.array([1e6, 5e3]))
    ok = np.isfinite(rates[0])
    assert np.allclose(rates[0][ok], 5.0) and np.isnan(rates[0]).any()
    assert ok.mean() > 0.8


def test_a_slow_scrape_holds_gauges_and_a_cold_job_has_no_first_rate() -> None:
    truth = np.arange(20, dtype=np.float64)[None, :]
    held = gauge(truth, 30.0, Scrape(60.0, 0.0, 0.0, None, True))
    assert (held[0, 0::2] == held[0, 1::2]).all()
    cold = rate(np.ones((1, 20)), 30.0, Scrape(15.0, 5.0, 0.0, None, False), np.zeros(1))
    assert np.isnan(cold[0, 0]) and np.allclose(cold[0, 2:], 1.0)


def _median(jobs: list[FamilyOJob], signal: str) -> float:
    values = [np.nanmedian(p.signals[signal]) for j in jobs for p in j.window.pods if signal in p.signals]
    values = [v for v in values if np.isfinite(v)]
    return float(np.median(values)) if values else float("nan")


@pytest.fixture(scope="module")
def family() -> list[FamilyOJob]:
    return generate_family_o(8, 150, start=1_800_000_000.0)


def test_input_bound_jobs_leave_their_gpus_waiting(family: list[FamilyOJob]) -> None:
    gpu = [j for j in family if j.label is Bottleneck.GPU and j.mechanism == "compute"]
    for cls in (Bottleneck.IO, Bottleneck.CPU):
        waiting = [j for j in family if j.label is cls]
        assert _median(waiting, "gr_engine_active") < _median(gpu, "gr_engine_active")


def test_host_memory_pressure_shows_as_stalls_not_oom(family: list[FamilyOJob]) -> None:
    host = [j for j in family if j.mechanism == "host-memory-pressure"]
    rest = [j for j in family if j.label is not Bottleneck.MEMORY]
    assert _median(host, "sc_psi_mem_some") > 0.05 > _median(rest, "sc_psi_mem_some")
    assert _median(host, "sc_majfault_ps") > 10 * _median(rest, "sc_majfault_ps")


def test_hbm_bound_jobs_run_dram_hot_with_idle_tensor_pipes(family: list[FamilyOJob]) -> None:
    hbm = [j for j in family if j.mechanism == "hbm-bandwidth"]
    compute = [j for j in family if j.mechanism == "compute"]
    assert _median(hbm, "dram_active") > _median(compute, "dram_active")
    assert _median(hbm, "tensor_active") < _median(compute, "tensor_active")


def test_throttled_cpu_jobs_are_throttled(family: list[FamilyOJob]) -> None:
    throttled = [j for j in family if j.mechanism == "throttled"]
    assert _median(throttled, "cpu_throttled_frac") > 0.5


def test_host_pressure_swaps_in_only_where_the_cluster_has_swap(family: list[FamilyOJob]) -> None:
    host = [j for j in family if j.mechanism == "host-memory-pressure"]
    with_swap = [j for j in host if "swap" in j.tags]
    without = [j for j in host if "swap" not in j.tags]
    assert with_swap and without
    assert _median(with_swap, "sc_swapin_ps") > 100.0
    assert _median(without, "sc_swapin_ps") == 0.0
    assert _median(without, "sc_majfault_ps") > 100.0  # reclaim shows as refaults instead
