"""Family X's model: the schedule, the critical path, the what-if, the exporters' arithmetic."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyx import FamilyXJob, generate_family_x
from bottleneck_operator_dev.familyx.exporters import Scrape, counter_values, read_exporter
from bottleneck_operator_dev.familyx.graph import KEY_CLASS, Kernel, RankCosts, schedule

START = 1_700_000_000.0


def _rank(
    *,
    decode: float = 0.01,
    read: float = 0.001,
    kernel: Kernel | None = None,
    allreduce: float = 0.0,
    h2d: float = 0.001,
    workers: int = 4,
) -> RankCosts:
    k = kernel or Kernel(0.01, 0.002, 0.0005)
    return RankCosts(
        workers=workers,
        depth=2 * workers,
        read_latency=0.0,
        read_xfer=read,
        io_key="io_local",
        decode=decode,
        decode_stretch=0.0,
        h2d=h2d,
        h2d_stretch=0.0,
        h2d_overlap=False,
        forward=((k,),) * 4,
        backward=((Kernel(2 * k.flop_s, 2 * k.byte_s, k.launch_s),),) * 4,
        allreduce=tuple((allreduce, "net", i) for i in range(4)) if allreduce else (),
        optimizer=Kernel(0.0, 0.001, 0.0001),
    )


# hand-built steps, each bound by a different stage
CASES = {
    "cpu": _rank(decode=1.0, workers=2),
    "io_local": _rank(read=0.4),
    "compute": _rank(),
    "hbm": _rank(kernel=Kernel(0.002, 0.01, 0.0005)),
    "launch": _rank(kernel=Kernel(0.0001, 0.0001, 0.01)),
    "net": _rank(allreduce=0.05),
    "pcie": _rank(h2d=0.3),
}


def _top(critical: dict[str, float]) -> str:
    return max(critical, key=lambda k: critical[k])


@pytest.mark.parametrize("key", list(CASES))
def test_label_from_the_composition_and_its_removal_shortens_the_step_most(key: str) -> None:
    ranks = [CASES[key], CASES[key]] if key == "net" else [CASES[key]]
    base = schedule(ranks)
    assert _top(base.critical) == key
    gains = {k: base.step_time - schedule(ranks, drop=k).step_time for k in base.critical}
    assert max(gains, key=lambda k: gains[k]) == key
    assert gains[key] > 0.2 * base.step_time


@pytest.mark.parametrize("key", list(CASES))
def test_critical_path_adds_up_to_the_step(key: str) -> None:
    sched = schedule([CASES[key]])
    assert sum(sched.critical.values()) == pytest.approx(sched.step_time, rel=1e-6)
    busy = sched.busy[0]
    assert busy["compute"] <= sched.step_time * (1 + 1e-9)
    assert busy["gpu_any"] <= sched.step_time * (1 + 1e-9)


def test_prefetch_hides_a_loader_faster_than_the_gpu() -> None:
    sched = schedule([_rank(decode=0.05, workers=8)])
    assert sched.critical.get("cpu", 0.0) < 0.05 * sched.step_time
    assert KEY_CLASS[_top(sched.critical)][0] is Bottleneck.GPU


def test_ranks_meet_at_every_allreduce_so_the_slowest_sets_the_pace() -> None:
    fast = _rank(allreduce=0.001)
    slow = _rank(kernel=Kernel(0.03, 0.002, 0.0005), allreduce=0.001)
    both = schedule([fast, slow])
    alone = schedule([slow, slow])
    assert both.step_time == pytest.approx(alone.step_time, rel=1e-6)
    assert both.step_time > schedule([fast, fast]).step_time * 2


def test_counters_rise_between_resets_and_restart_from_zero() -> None:
    rng = np.random.default_rng(0)
    t_fine = START + 5.0 * np.arange(400)
    rows = np.abs(rng.normal(3.0, 1.0, size=(2, 400)))
    times = START + 7.0 + 15.0 * np.arange(130)
    restart = START + 1000.0
    values = counter_values(rows, t_fine, times, restart, rng)
    before, after = times < restart, times >= restart
    assert (np.diff(values[:, before], axis=1) >= 0).all()
    assert (np.diff(values[:, after], axis=1) >= 0).all()
    assert (values[:, after][:, 0] < 3.0 * 15.0 * 3).all()


def test_exporters_read_a_steady_timeline_back() -> None:
    rng = np.random.default_rng(1)
    t_fine = START - 360.0 + 5.0 * np.arange(500)
    names = ("cpu_cores", "mem_working_set_bytes")
    fine = np.vstack([np.full(500, 6.0), np.full(500, 3e9)])
    grid = START + 30.0 * np.arange(60)
    out = read_exporter(fine, names, t_fine, Scrape(15.0, 0.1, 0.0, START + 600.0), grid, 30.0, rng)
    cpu = out["cpu_cores"][np.isfinite(out["cpu_cores"])]
    assert np.median(cpu) == pytest.approx(6.0, rel=0.01)
    # rate() loses what a restarted exporter counted before its first scrape: never more, sometimes less
    assert (cpu <= 6.0 * 1.01).all() and (np.abs(cpu - 6.0) < 0.06).mean() > 0.9
    np.testing.assert_allclose(out["mem_working_set_bytes"], 3e9)


@cache
def _jobs() -> tuple[FamilyXJob, ...]:
    return tuple(generate_family_x(5, 60, start=START))


def _mean(jobs: list[FamilyXJob], signal: str) -> list[float]:
    out = []
    for j in jobs:
        values = [np.nanmean(p.signals[signal]) for p in j.window.pods if signal in p.signals]
        values = [v for v in values if np.isfinite(v)]
        if values:
            out.append(float(np.mean(values)))
    return out


def _of(label: Bottleneck, mechanism: str | None = None) -> list[FamilyXJob]:
    return [j for j in _jobs() if j.label is label and (mechanism is None or j.mechanism == mechanism)]


def test_input_bound_jobs_leave_the_gpu_idler_than_gpu_bound_ones() -> None:
    gpu = np.median(_mean(_of(Bottleneck.GPU, "compute"), "gpu_util"))
    for label in (Bottleneck.IO, Bottleneck.CPU):
        assert np.median(_mean(_of(label), "gpu_util")) < gpu - 0.3


def test_io_bound_jobs_wait_on_io_and_host_memory_jobs_on_memory() -> None:
    io = _mean([j for j in _of(Bottleneck.IO) if "nfs" in j.tags or j.mechanism == "local-disk"], "sc_psi_io_some")
    assert io and np.median(io) > 0.2
    host = _mean(_of(Bottleneck.MEMORY, "host-memory-pressure"), "sc_psi_mem_some")
    assert host and min(host) > 0.02
    others = _mean([j for j in _jobs() if j.mechanism != "host-memory-pressure"], "sc_psi_mem_some")
    assert max(others) < 0.01


def test_hbm_bound_jobs_run_dram_near_its_practical_peak() -> None:
    dram = _mean(_of(Bottleneck.MEMORY, "hbm-bandwidth"), "dram_active")
    assert dram and np.median(dram) > 0.5
    compute = _mean(_of(Bottleneck.GPU, "compute"), "dram_active")
    assert np.median(compute) < np.median(dram)


def test_network_bound_jobs_move_bytes_between_nodes() -> None:
    for j in _of(Bottleneck.INTERCONNECT, "network"):
        assert len(j.window.pods) > 1
        moved = _mean([j], "ib_rx_bps") + _mean([j], "node_net_rx_bps")
        assert not moved or max(moved) > 1e6
