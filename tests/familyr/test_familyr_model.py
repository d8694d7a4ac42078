"""Family R's own step model, its counters, and the physics its windows must show per class.

Every expectation here comes from the generator's stage model (steps.py, truth.py), not from the
project's analysis.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyr import FamilyRJob, draw, scrape, steps, truth
from bottleneck_operator_dev.familyr.steps import COMM, COMPUTE, HBM, READ

START = 1_700_000_000.0


def _stages(**seconds: float) -> steps.FloatArray:
    s = np.zeros((len(steps.STAGES), 1))
    for name, value in seconds.items():
        s[steps.STAGES.index(name)] = value
    return s


def test_the_longer_half_bounds_the_step() -> None:
    s = _stages(read=0.9, preprocess=0.4, compute=0.5, hbm=0.1, comm=0.5)
    # GPU half: 0.5 + 0.1 kernels, comm 0.5 of which 0.5 * 0.6 hides behind them.
    np.testing.assert_allclose(steps.step_time(s, np.array([0.5])), [0.9])
    gains = steps.removal_gains(s, np.array([0.5]), np.ones(1))
    assert steps.label_of(gains) == (Bottleneck.IO, "read")
    assert gains[COMPUTE] == 0.0 and gains[READ] > 0


def test_a_phase_can_change_the_window_label() -> None:
    s = np.concatenate([_stages(read=1.0, compute=0.5), _stages(read=0.1, compute=0.5)], axis=1)
    weight = np.array([1.0, 3.0])  # three quarters of the window after the cache warmed
    gains = steps.removal_gains(s, np.zeros(2), weight)
    assert steps.label_of(gains)[0] is Bottleneck.GPU
    assert gains[READ] > 0  # the cold part still counts


def test_hidden_communication_is_not_a_bound() -> None:
    s = _stages(compute=1.0, hbm=0.2, comm=0.5)
    gains = steps.removal_gains(s, np.array([0.8]), np.ones(1))
    assert gains[COMM] == 0.0 and steps.label_of(gains)[1] == "compute"
    assert gains[HBM] > 0


def test_every_label_is_the_step_models() -> None:
    for i, cls in enumerate((Bottleneck.IO, Bottleneck.MEMORY, Bottleneck.INTERCONNECT)):
        rng = np.random.default_rng((5, i))
        plan, out = draw.draw_job(rng, cls, START, 30.0, 40)
        again = draw.judge(plan, START)
        assert out.label is again.label is cls
        assert steps.STAGE_CLASS[again.stage] is cls


def test_counters_are_monotone_between_resets() -> None:
    rng = np.random.default_rng(3)
    plan, _ = draw.draw_job(rng, Bottleneck.CPU, START, 15.0, 60)
    sh = truth.shares(plan, 1.0)
    values = {**truth.gpu_truth(plan, rng, sh), **truth.host_truth(plan, rng, sh)}
    values = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), plan.times.shape) for k, v in values.items()}
    grid = START + 15.0 * np.arange(60, dtype=np.float64)
    names = ["cpu_cores", "node_cpu_busy_frac", "node_disk_read_bps", "node_psi_io_some"]
    seen_reset = False
    for trial in range(40):
        _, raw = scrape.sample_exporter(plan, np.random.default_rng(trial), [values, values], names, grid, 15.0)
        assert raw is not None
        for row, reset in zip(raw.values, raw.resets, strict=True):
            d = np.diff(row)
            if np.isfinite(reset):
                seen_reset = True
                at = raw.times[1:] >= reset
                assert (d[~at] >= 0).all() and (np.diff(row[1:][at]) >= 0).all()
            else:
                assert (d >= 0).all()
    assert seen_reset


def _mean(job: FamilyRJob, name: str) -> float | None:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals]
    if not rows or not np.isfinite(np.concatenate(rows)).any():
        return None
    return float(np.nanmean(np.concatenate(rows)))


def _median(jobs: list[FamilyRJob], name: str) -> float:
    got = [m for j in jobs if (m := _mean(j, name)) is not None]
    assert got, name
    return float(np.median(got))


def test_each_class_shows_its_physics(family: list[FamilyRJob]) -> None:
    by = {c: [j for j in family if j.label is c] for c in Bottleneck}
    mech = {m: [j for j in family if j.mechanism == m] for m in {j.mechanism for j in family}}
    # An input-bound step leaves the GPUs waiting; a compute-bound one keeps them busy.
    assert _median(by[Bottleneck.IO], "gpu_util") < _median(by[Bottleneck.GPU], "gpu_util")
    assert _median(by[Bottleneck.CPU], "gpu_util") < _median(by[Bottleneck.GPU], "gpu_util")
    assert _median(by[Bottleneck.GPU], "gpu_util") > 0.7
    # Readers stall on IO; host-memory pressure stalls on memory.
    assert _median(by[Bottleneck.IO], "node_psi_io_some") > _median(by[Bottleneck.GPU], "node_psi_io_some")
    pressed = mech["host-memory-pressure"]
    assert _median(pressed, "node_psi_mem_some") > 10 * _median(by[Bottleneck.GPU], "node_psi_mem_some")
    assert _median(pressed, "node_majfault_ps") > _median(by[Bottleneck.GPU], "node_majfault_ps")
    # Bandwidth-bound kernels keep DRAM busy and the tensor pipes idle, next to compute-bound ones.
    hbm = mech["hbm-bandwidth"]
    assert _median(hbm, "mem_copy_util") > _median(by[Bottleneck.GPU], "mem_copy_util")
    assert _median(hbm, "dram_active") > _median(by[Bottleneck.GPU], "dram_active")
    assert _median(hbm, "tensor_active") < _median(by[Bottleneck.GPU], "tensor_active")
    # The preprocessing workers use the cores they have.
    assert _median(by[Bottleneck.CPU], "cpu_cores") > _median(by[Bottleneck.GPU], "cpu_cores")
    # Host-to-device copies at link speed.
    assert _median(mech["pcie"], "pcie_rx_bps") > _median(by[Bottleneck.GPU], "pcie_rx_bps")


def _fabric_bps(job: FamilyRJob) -> float:
    return sum(m for n in ("ib_rx_bps", "node_net_tx_bps") if (m := _mean(job, n)) is not None)


def test_network_bound_jobs_fill_their_fabric(family: list[FamilyRJob]) -> None:
    network = [j for j in family if j.mechanism == "network"]
    compute = [j for j in family if j.label is Bottleneck.GPU]
    assert network and np.median([_fabric_bps(j) for j in network]) > np.median([_fabric_bps(j) for j in compute])
