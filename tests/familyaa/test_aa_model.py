"""The causal model, its interventional label, the copula, the counters, and per-class physics."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import counter_rate
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyaa import FamilyAAJob
from bottleneck_operator_dev.familyaa.causal import (
    COMPUTE,
    DECODE,
    LAUNCH,
    READ,
    REGIMES,
    STAGE_CLASS,
    STAGES,
    STEADY,
    Stages,
    build_stages,
    draw_environment,
    intervention_gains,
    label_stage,
    mechanism_of,
    power_clock_factor,
)
from bottleneck_operator_dev.familyaa.hardware import GPUS, draw_cluster
from bottleneck_operator_dev.familyaa.observe import CORRELATION, DT, GPU, POWER, copula_noise, counter_samples
from bottleneck_operator_dev.familyaa.workload import draw_workload


def _stages(steady: dict[int, float], *, pods: int = 1) -> Stages:
    """Stage times by hand: the same in every regime unless changed afterwards."""
    row = np.zeros(len(STAGES))
    for k, v in steady.items():
        row[k] = v
    times = np.broadcast_to(row, (len(REGIMES), pods, len(STAGES))).copy()
    return Stages(times, 0.5, False, 0.0, 0.0, 8.0, np.ones((len(REGIMES), pods)))


EVEN = np.full(len(REGIMES), 1.0 / len(REGIMES))


def test_reads_dominating_every_regime_label_io() -> None:
    st = _stages({READ: 0.9, DECODE: 0.3, COMPUTE: 0.2, LAUNCH: 0.01})
    st.times[:, 0, READ] = np.linspace(0.6, 1.2, len(REGIMES))  # dominant however the regime moves it
    assert STAGE_CLASS[label_stage(st, EVEN)] is Bottleneck.IO


def test_a_close_second_stage_does_not_change_the_label() -> None:
    st = _stages({READ: 0.50, DECODE: 0.48, COMPUTE: 0.2})
    gains = intervention_gains(st, EVEN)
    assert STAGE_CLASS[int(np.argmax(gains))] is Bottleneck.IO
    assert gains[READ] == pytest.approx(0.02)  # the step falls to the runner-up, not to zero
    assert gains[DECODE] == pytest.approx(0.0)


def test_kernels_at_a_capped_clock_label_gpu() -> None:
    rng = np.random.default_rng(0)
    a100 = GPUS[1]
    cluster = replace(
        draw_cluster(rng),
        gpu=a100,
        pods=1,
        gpus_per_pod=1,
        power_cap_w=0.6 * a100.tdp_w,
        board_spread=(1.0,),
        storage="nvme",
        storage_gbs=7.0,
        cpu_limit=0.0,
        mem_limit_gb=0.0,
    )
    workload = replace(draw_workload(rng, "gpt"), precision="bf16", batch=8, workers=8, fill=0.95, ws_gb=10.0)
    env = draw_environment(rng, cluster)
    uncapped = build_stages(replace(cluster, power_cap_w=a100.tdp_w), workload, env)
    capped = build_stages(cluster, workload, env)
    assert power_clock_factor(cluster, workload) < 1.0
    assert capped.times[STEADY, 0, COMPUTE] > uncapped.times[STEADY, 0, COMPUTE]  # the cap lengthens kernels
    best = label_stage(capped, EVEN)
    assert STAGE_CLASS[best] is Bottleneck.GPU
    assert mechanism_of(best, cluster, workload, capped) is Mechanism.COMPUTE


def test_launch_bound_small_kernels_are_gpu_and_hbm_bound_kernels_memory() -> None:
    rng = np.random.default_rng(1)
    cluster = draw_cluster(rng)
    workload = draw_workload(rng, "small")
    launch = _stages({LAUNCH: 0.05, COMPUTE: 0.005, READ: 0.001})
    best = label_stage(launch, EVEN)
    assert (STAGE_CLASS[best], mechanism_of(best, cluster, workload, launch)) == (
        Bottleneck.GPU,
        Mechanism.LAUNCH_BOUND,
    )
    hbm = _stages({5: 0.08, COMPUTE: 0.02, READ: 0.01})
    best = label_stage(hbm, EVEN)
    assert (STAGE_CLASS[best], mechanism_of(best, cluster, workload, hbm)) == (
        Bottleneck.MEMORY,
        Mechanism.HBM_BANDWIDTH,
    )


def test_a_straggler_slows_the_whole_job() -> None:
    st = _stages({COMPUTE: 0.1, READ: 0.05}, pods=2)
    st.times[:, 1, COMPUTE] *= 1.5  # one pod slower everywhere
    gains = intervention_gains(st, EVEN)
    assert gains[COMPUTE] == pytest.approx(0.15 - 0.05)  # removal saves the slow pod's time, the job waits on it


def test_copula_noise_moves_gpu_and_power_together() -> None:
    z = copula_noise(np.random.default_rng(2), 40_000)
    r = np.corrcoef(z[GPU], z[POWER])[0, 1]
    assert r == pytest.approx(CORRELATION[GPU, POWER], abs=0.05)
    assert z.std(axis=1) == pytest.approx(np.ones(10), abs=0.05)


def test_counters_rise_between_resets_and_rate_reads_through_a_reset() -> None:
    rng = np.random.default_rng(3)
    ticks = 1000.0 + DT * np.arange(400, dtype=np.float64)
    rate = np.full(ticks.size, 250.0)
    times = 1003.0 + 15.0 * np.arange(120, dtype=np.float64)
    value = counter_samples(rng, ticks, rate, times, restart=1500.0)
    drops = np.flatnonzero(np.diff(value) < 0)
    assert drops.size == 1 and times[drops[0]] < 1500.0 < times[drops[0] + 1]
    assert value[drops[0] + 1] < 250.0 * 30  # counting again from zero
    at = 1200.0 + 30.0 * np.arange(20)
    rates = counter_rate(times, value, at, 60.0)
    # ranges clear of the restart read the rate exactly; the one over it loses only the bytes
    # counted before the restart since the last scrape (never a negative rate)
    clear = (at < 1500.0) | (at - 60.0 > 1500.0)
    assert np.allclose(rates[clear], 250.0, rtol=1e-6)
    assert ((rates > 0.5 * 250.0) & (rates <= 250.0 + 1e-6)).all()


def _mean(job: FamilyAAJob, name: str) -> float:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals]
    if not rows:
        return float("nan")
    return float(np.nanmean(np.concatenate(rows)))


def _median(family: list[FamilyAAJob], label: Bottleneck, name: str, tag: str = "") -> float:
    vals = [_mean(j, name) for j in family if j.label is label and (not tag or tag in j.tags)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.median(vals)) if vals else float("nan")


def test_input_bound_classes_leave_the_gpu_idle_and_gpu_jobs_keep_it_busy(family: list[FamilyAAJob]) -> None:
    gpu = _median(family, Bottleneck.GPU, "gpu_util")
    assert gpu > 0.8
    assert _median(family, Bottleneck.IO, "gpu_util") < gpu - 0.2
    assert _median(family, Bottleneck.CPU, "gpu_util") < gpu - 0.2


def test_cpu_bound_jobs_use_more_cores_and_wait_on_cpu_more(family: list[FamilyAAJob]) -> None:
    cpu = [_mean(j, "sc_psi_cpu_some") for j in family if j.label is Bottleneck.CPU]
    other = [_mean(j, "sc_psi_cpu_some") for j in family if j.label is Bottleneck.GPU]
    assert np.nanmedian(cpu) > np.nanmedian(other)


def test_memory_mechanisms_show_where_they_should(family: list[FamilyAAJob]) -> None:
    for job in family:
        if job.mechanism == Mechanism.HOST_MEMORY_PRESSURE.value and "sc_psi_mem_some" in job.window.pods[0].signals:
            assert _mean(job, "sc_psi_mem_some") > 0.01
            assert _mean(job, "sc_majfault_ps") > 10.0
        if job.mechanism == Mechanism.HBM_BANDWIDTH.value and "dram_active" in job.window.pods[0].signals:
            assert _mean(job, "dram_active") > _mean(job, "tensor_active")


def test_a_neighbour_shows_on_the_node_only(family: list[FamilyAAJob]) -> None:
    seen = 0
    for job in family:
        for pod in job.window.pods:
            if "sc_net_rx_bps" not in pod.signals:
                continue
            node, own = pod.signals["node_net_rx_bps"], pod.signals["sc_net_rx_bps"]
            ok = np.isfinite(node) & np.isfinite(own)
            # the node's NICs carry the pod's bytes and more (per-sample noise aside)
            assert np.median(node[ok] / np.maximum(own[ok], 1.0)) >= 0.9
            seen += 1
    assert seen > 0


def test_network_bound_jobs_move_bytes_between_nodes(family: list[FamilyAAJob]) -> None:
    for job in family:
        if job.mechanism != Mechanism.NETWORK.value:
            continue
        assert len(job.window.pods) > 1
        sig = "ib_rx_bps" if "fabric:rdma" in job.tags else "node_net_rx_bps"
        if sig in job.window.pods[0].signals:
            assert _mean(job, sig) > 1e7
