"""Each class looks the way family H's own step model says it must: derived from the model, not from any analysis."""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyh import FamilyHJob, generate_family_h
from bottleneck_operator_dev.familyh.generate import _drafted
from bottleneck_operator_dev.familyh.hardware import BOARDS, FABRICS
from bottleneck_operator_dev.familyh.stepmodel import Stages, label_of, mechanism_of, speedups

from .conftest import START

BOARD_BY_MODEL = {b.model_name: b for b in BOARDS.values()}


def _median(job: FamilyHJob, name: str) -> float | None:
    """The job's typical value of a signal: the mean over pods of each pod's median; None when absent."""
    per_pod = [
        float(np.nanmedian(p.signals[name]))
        for p in job.window.pods
        if name in p.signals and np.isfinite(p.signals[name]).any()
    ]
    return float(np.mean(per_pod)) if per_pod else None


def _of(family: list[FamilyHJob], label: Bottleneck, mechanism: Mechanism | None = None) -> list[FamilyHJob]:
    jobs = [j for j in family if j.label is label and (mechanism is None or j.mechanism == mechanism.value)]
    assert jobs
    return jobs


def _stages(**kw: object) -> Stages:
    base = dict(
        read_s=0.01,
        storage_s=0.01,
        decode_s=0.02,
        worker_stall_s=0.0,
        workers=8,
        cores=8.0,
        cores_from_limit=False,
        h2d_s=0.002,
        tensor_s=0.1,
        hbm_s=0.03,
        bubble=0.0,
        comm_s=0.01,
        comm_scope="nvlink",
        main_stall_s=0.0,
    )
    base.update(kw)
    return Stages(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "label"),
    [
        ({}, Bottleneck.GPU),
        ({"storage_s": 0.5, "read_s": 0.5}, Bottleneck.IO),
        ({"decode_s": 4.0}, Bottleneck.CPU),
        ({"comm_s": 0.4}, Bottleneck.INTERCONNECT),
        ({"hbm_s": 0.3}, Bottleneck.MEMORY),
        ({"main_stall_s": 0.3}, Bottleneck.MEMORY),
    ],
)
def test_the_label_is_the_stage_whose_removal_helps_most(changes: dict[str, float], label: Bottleneck) -> None:
    stages = _stages(**changes)
    got, top, second = label_of(stages)
    assert got is label
    assert top == max(speedups(stages).values()) >= second >= 1.0


def test_mechanisms_follow_the_dominant_stage() -> None:
    assert (
        mechanism_of(_stages(decode_s=4.0, workers=2, cores=16.0), Bottleneck.CPU, False) is Mechanism.TOO_FEW_WORKERS
    )
    assert (
        mechanism_of(_stages(decode_s=4.0, workers=16, cores=2.0, cores_from_limit=True), Bottleneck.CPU, False)
        is Mechanism.THROTTLED
    )
    assert mechanism_of(_stages(hbm_s=0.3), Bottleneck.MEMORY, False) is Mechanism.HBM_BANDWIDTH
    assert mechanism_of(_stages(main_stall_s=0.3), Bottleneck.MEMORY, False) is Mechanism.HOST_MEMORY_PRESSURE
    assert mechanism_of(_stages(comm_s=0.4, comm_scope="network"), Bottleneck.INTERCONNECT, False) is Mechanism.NETWORK
    assert mechanism_of(_stages(storage_s=0.5), Bottleneck.IO, True) is Mechanism.NETWORK_STORAGE


@pytest.mark.parametrize(
    ("cls", "mech"),
    [
        (Bottleneck.IO, Mechanism.LOCAL_DISK),
        (Bottleneck.IO, Mechanism.NETWORK_STORAGE),
        (Bottleneck.CPU, Mechanism.THROTTLED),
        (Bottleneck.CPU, Mechanism.SATURATED),
        (Bottleneck.INTERCONNECT, Mechanism.NETWORK),
        (Bottleneck.INTERCONNECT, Mechanism.NVLINK),
        (Bottleneck.GPU, Mechanism.COMPUTE),
        (Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
        (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
    ],
)
def test_drafted_jobs_are_labelled_by_the_step_model(cls: Bottleneck, mech: Mechanism) -> None:
    for k in range(4):
        d, _, _, _ = _drafted(np.random.default_rng([99, k]), cls, mech)
        sp = speedups(d.stages)
        assert d.label is cls is max(sp, key=sp.__getitem__)
        assert d.margin >= 1.0
        # what the job moves fits its hardware
        assert d.batch_bytes * d.gpus / d.stages.step_s <= d.storage.bw_bps * 1.05


def test_input_bound_jobs_leave_their_gpus_waiting(family: list[FamilyHJob]) -> None:
    def typical(jobs: list[FamilyHJob]) -> float:
        return float(np.median([v for j in jobs if (v := _median(j, "gpu_util")) is not None]))

    starved = typical(_of(family, Bottleneck.IO) + _of(family, Bottleneck.CPU))
    assert starved < 0.85
    assert starved < typical(_of(family, Bottleneck.GPU)) - 0.1


def test_gpu_bound_jobs_keep_their_gpus_busy(family: list[FamilyHJob]) -> None:
    for job in _of(family, Bottleneck.GPU):
        util = _median(job, "gpu_util")
        assert util is None or util > 0.7
        tensor = _median(job, "tensor_active")
        if tensor is not None and "fp32-math" not in job.tags:
            assert tensor > 0.1


def test_throttled_jobs_are_throttled(family: list[FamilyHJob]) -> None:
    for job in _of(family, Bottleneck.CPU, Mechanism.THROTTLED):
        assert "cpu-limit" in job.tags
        frac = _median(job, "cpu_throttled_frac")
        assert frac is None or frac > 0.5


def test_saturated_cpu_jobs_share_a_busy_node(family: list[FamilyHJob]) -> None:
    for job in _of(family, Bottleneck.CPU, Mechanism.SATURATED):
        busy = _median(job, "node_cpu_busy_frac")
        assert busy is None or busy > 0.7


def test_host_memory_pressure_shows_as_stalls_and_faults(family: list[FamilyHJob]) -> None:
    for job in _of(family, Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE):
        some = _median(job, "sc_psi_mem_some")
        assert some is None or some > 0.3
        faults = _median(job, "sc_majfault_ps")
        assert faults is None or faults > 20.0


def test_hbm_bound_jobs_keep_dram_busier_than_tensor_pipes(family: list[FamilyHJob]) -> None:
    for job in _of(family, Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH):
        dram, tensor = _median(job, "dram_active"), _median(job, "tensor_active")
        if dram is not None and tensor is not None:
            assert dram > 0.3
            assert dram > tensor


def test_link_bound_jobs_move_bytes_near_their_links(family: list[FamilyHJob]) -> None:
    for job in _of(family, Bottleneck.INTERCONNECT, Mechanism.NVLINK):
        board = BOARD_BY_MODEL[job.tags[1]]
        total = _median(job, "nvlink_total_bps")
        assert total is None or total > 0.2 * 2 * board.nvlink_bps
    for job in _of(family, Bottleneck.INTERCONNECT, Mechanism.NETWORK):
        fabric = next(FABRICS[t] for t in job.tags if t in FABRICS)
        ib = _median(job, "ib_rx_bps")
        clean = not {"ib-legacy-counters", "ib-counter-reset", "container-restart"} & set(job.tags)
        if fabric.rdma and ib is not None and clean:
            assert ib > 0.1 * fabric.bw_bps
        net = _median(job, "node_net_rx_bps")
        if not fabric.rdma and net is not None:
            assert net > 0.1 * fabric.bw_bps


def test_time_sliced_gpus_are_single_gpus_on_shared_nodes() -> None:
    sliced = [j for j in generate_family_h(21, 120, start=START) if "gpu-time-sliced" in j.tags]
    assert sliced
    for job in sliced:
        assert all(p.gpu_count in (0, 1) and p.co_located_pods >= 1 for p in job.window.pods)
