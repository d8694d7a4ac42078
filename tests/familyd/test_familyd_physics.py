"""Each class shows what its mechanism physically implies, in the generator's own step model.

Nothing here comes from the project's analysis: the expectations follow from the stage model
(docs/familyd.md) - an input-bound job's GPUs wait, a throttled job is throttled, a
host-memory-pressure job stalls on memory - and are read from the job's activity and window.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyd.job import Simulated, tags_of
from bottleneck_operator_dev.familyd.stages import STAGES, account, bounding_stage, speedups

Family_D = list[tuple[Bottleneck, str, Simulated]]


def _of(simulated: Family_D, label: Bottleneck) -> list[Simulated]:
    jobs = [sim for lab, _, sim in simulated if lab is label]
    assert jobs, f"no {label} job in the family"
    return jobs


def _median(sim: Simulated, signal: str) -> float | None:
    rows = [p.signals[signal] for p in sim.window.pods if signal in p.signals]
    values = np.concatenate(rows) if rows else np.array([])
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else None


def _running(sim: Simulated) -> np.ndarray:
    return sim.activity.paused[0] < 0.5  # pauses stop every pod at once


def test_the_label_is_the_stage_whose_removal_speeds_the_step_most(simulated: Family_D) -> None:
    for label, _, sim in simulated:
        d = sim.drawn
        synced = d.setup.total_gpus > 1
        stage, gain, runner = bounding_stage(d.plan, synced)
        assert STAGES[stage][0] is label and stage == d.stage
        gains = speedups(d.plan, synced)
        assert all(gains[s] <= gain for s in gains) and gain >= runner >= 1.0


def test_some_jobs_are_hard_cases(simulated: Family_D) -> None:
    hard = [sim for _, _, sim in simulated if sim.drawn.runner_up - 1.0 >= 0.5 * (sim.drawn.gain - 1.0)]
    assert len(hard) >= 3
    assert all("mixed" in tags_of(sim.drawn, sim.scrapes) for sim in hard)


def test_input_bound_jobs_leave_their_gpus_waiting(simulated: Family_D) -> None:
    for label in (Bottleneck.IO, Bottleneck.CPU):
        for sim in _of(simulated, label):
            busy = sim.activity.busy[:, _running(sim)]
            acc = account(sim.drawn.plan, sim.drawn.setup.total_gpus > 1)
            assert (acc.input >= acc.step - 1e-9).any()
            assert busy.mean() < 0.97


def test_io_bound_jobs_read_at_their_storages_capacity(simulated: Family_D) -> None:
    for sim in _of(simulated, Bottleneck.IO):
        w = sim.drawn.workload
        # every rank waits for the slowest pod's reads, and the storage's throughput wanders, so
        # the pods' average reads stay somewhat below the nominal capacity
        delivered = sim.activity.read_bps[:, _running(sim)].mean(axis=1) / w.read_bps
        assert delivered.max() > 0.55, sim.drawn.mechanism_draw
        io = _median(sim, "sc_psi_io_some")
        if io is not None and w.io_kind not in ("object-store",):
            assert io > 0.4


def test_cpu_bound_jobs_use_the_cores_their_loader_may_use(simulated: Family_D) -> None:
    for sim in _of(simulated, Bottleneck.CPU):
        w = sim.drawn.workload
        wanted = sim.activity.demand[:, _running(sim)].mean(axis=1)
        used = sim.activity.cores[:, _running(sim)].mean(axis=1)
        assert (used > 0.7 * w.loader_cores).all()
        assert (wanted >= used).all()
        if w.cpu_kind in ("throttled", "saturated"):
            # more workers than cores to run them: the slowest pod wants more than it gets
            assert (wanted > 1.05 * used).any()
        throttled = _median(sim, "cpu_throttled_frac") or _median(sim, "sc_throttled_frac")
        if w.cpu_kind == "throttled" and throttled is not None:
            assert throttled > 0.5


def test_host_memory_pressure_shows_as_memory_stalls(simulated: Family_D) -> None:
    host = [sim for sim in _of(simulated, Bottleneck.MEMORY) if sim.drawn.workload.mem_kind]
    assert host
    for sim in host:
        stalls = [_median(sim, s) for s in ("sc_psi_mem_some", "node_psi_mem_some")]
        seen = [s for s in stalls if s is not None]
        assert not seen or max(seen) > 0.2
        if sim.drawn.workload.mem_kind == "swap":
            assert sim.activity.swapin.mean() > 100.0
    for label, _, sim in simulated:
        if label is not Bottleneck.MEMORY:
            assert not sim.activity.swapin.any() and sim.activity.mem_wait.max() < 0.05


def test_hbm_bound_jobs_spend_their_kernels_on_memory(simulated: Family_D) -> None:
    hbm = [sim for sim in _of(simulated, Bottleneck.MEMORY) if not sim.drawn.workload.mem_kind]
    assert hbm
    for sim in hbm:
        assert sim.activity.hbm.mean() > sim.activity.math.mean()
        dram, tensor = _median(sim, "dram_active"), _median(sim, "tensor_active")
        if dram is not None and tensor is not None:
            assert dram > tensor and dram > 0.3


def test_gpu_bound_jobs_keep_their_gpus_computing(simulated: Family_D) -> None:
    for sim in _of(simulated, Bottleneck.GPU):
        run = _running(sim)
        assert sim.activity.math[:, run].mean() > sim.activity.hbm[:, run].mean()
        assert sim.activity.busy[:, run].mean() > 0.6


def test_network_bound_jobs_fill_their_fabric(simulated: Family_D) -> None:
    network = [sim for sim in _of(simulated, Bottleneck.INTERCONNECT) if sim.drawn.stage == "network"]
    assert network
    for sim in network:
        setup, w = sim.drawn.setup, sim.drawn.workload
        assert setup.nodes >= 2 and setup.fabric is not None
        per_pod = w.net_bps / setup.pods_per_node
        carried = (sim.activity.ib_rx if setup.fabric.rdma else sim.activity.net_rx)[:, _running(sim)].mean()
        assert carried > 0.35 * per_pod
        if setup.fabric.rdma:
            assert not sim.activity.net_rx.any() or sim.activity.net_rx.mean() < 0.1 * carried


def test_checkpoint_pauses_stop_the_gpus(simulated: Family_D) -> None:
    paused = [sim for _, _, sim in simulated if sim.activity.paused.any()]
    assert paused
    for sim in paused:
        assert sim.activity.busy[sim.activity.paused > 0.5].max() == 0.0


def test_a_slowed_gpu_slows_its_pod_and_its_peers_wait(simulated: Family_D) -> None:
    stragglers = [sim for _, _, sim in simulated if (sim.drawn.workload.slow_gpu < 1.0).any()]
    assert stragglers
    for sim in stragglers:
        slow = int(np.argmin(sim.drawn.workload.slow_gpu))
        clocks = [np.nanmean(p.signals["sm_clock_mhz"]) for p in sim.window.pods]
        assert clocks[slow] < np.median(clocks)
        flagged = sim.window.pods[slow].signals.get("clock_slowdown_frac")
        if flagged is not None:
            assert np.nanmin(flagged) >= 1.0 / sim.drawn.setup.gpus - 1e-9
        acc = account(sim.drawn.plan, True)
        if sim.drawn.stage == "math":
            # the slowed pod bounds a compute-bound step: every other pod waits for it
            assert acc.own[slow] == acc.step[slow]
            others = np.delete(acc.wait, slow)
            assert (others > 0).all()
