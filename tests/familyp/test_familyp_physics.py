"""Family P's own physics: labels come from the step model, and the telemetry follows the stages.

Every expectation here is derived from the generator's step model (docs/familyp.md), never from the
project's analysis.
"""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator_dev.familyp import FamilyPJob, generate_family_p
from bottleneck_operator_dev.familyp.steps import StepModel, tune_margin
from bottleneck_operator_dev.familyp.workloads import draw_plan

START = 1_760_000_000.0
B = Bottleneck


@pytest.fixture(scope="module")
def jobs() -> list[FamilyPJob]:
    return generate_family_p(23, 100, start=START)


def _mean(job: FamilyPJob, name: str) -> float | None:
    values = [np.nanmean(p.signals[name]) for p in job.window.pods if name in p.signals]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else None


def _class_values(jobs: list[FamilyPJob], name: str, pick: object) -> list[float]:
    return [v for j in jobs if pick(j) and (v := _mean(j, name)) is not None]  # type: ignore[operator]


def test_removing_the_bound_stage_helps_most() -> None:
    base = StepModel(read=0.2, decode=0.3, h2d=0.05, tensor=0.6, hbm=0.2, comm=0.1, swap=0.0)
    assert base.bound()[0] is B.GPU
    io = StepModel(read=2.0, decode=0.3, h2d=0.05, tensor=0.6, hbm=0.2, comm=0.1, swap=0.0)
    cls, best, second = io.bound()
    assert cls is B.IO and best > second
    assert io.without(B.IO).step < io.without(B.GPU).step
    swap = StepModel(read=0.1, decode=0.1, h2d=0.0, tensor=0.3, hbm=0.2, comm=0.0, swap=0.6)
    assert swap.bound()[0] is B.MEMORY and swap.memory_mechanism() == "host-memory-pressure"


@pytest.mark.parametrize("margin", [1.05, 1.5, 4.0])
@pytest.mark.parametrize(
    "target,stage", [(B.IO, "read"), (B.CPU, "decode"), (B.INTERCONNECT, "comm"), (B.MEMORY, "hbm")]
)
def test_tuning_reaches_the_asked_lead(target: Bottleneck, stage: str, margin: float) -> None:
    base = StepModel(read=0.2, decode=0.3, h2d=0.05, tensor=0.6, hbm=0.2, comm=0.1, swap=0.0)
    tuned = tune_margin(base, stage, target, margin)
    assert tuned is not None
    cls, best, second = tuned.bound()
    assert cls is target and best / second == pytest.approx(margin, rel=0.01)


def test_plans_bind_where_asked_for_every_class() -> None:
    for i in range(100):
        target = CLASSES[i % 5]
        plan = draw_plan(np.random.default_rng([4, i]), target, None)
        assert plan.model.bound()[0] is target
        assert 1 <= plan.pods <= 16 and 1 <= plan.gpus <= 8


def test_input_bound_jobs_leave_their_gpus_waiting(jobs: list[FamilyPJob]) -> None:
    def busy(pick: object) -> float:
        values = _class_values(jobs, "gr_engine_active", pick) or _class_values(jobs, "gpu_util", pick)
        return float(np.median(values))

    gpu = busy(lambda j: j.label is B.GPU)
    assert busy(lambda j: j.label is B.IO) < gpu
    assert busy(lambda j: j.label is B.CPU) < gpu


def test_host_memory_pressure_shows_as_memory_stalls(jobs: list[FamilyPJob]) -> None:
    host = _class_values(jobs, "sc_psi_mem_some", lambda j: j.mechanism == "host-memory-pressure")
    other = _class_values(jobs, "sc_psi_mem_some", lambda j: j.label is not B.MEMORY)
    assert host and other
    assert min(host) > 0.1 and np.median(host) > 5 * np.median(other)


def test_hbm_bound_jobs_keep_dram_busy_and_tensor_pipes_light(jobs: list[FamilyPJob]) -> None:
    def hbm(j: FamilyPJob) -> bool:
        return j.mechanism == "hbm-bandwidth"

    def gpu(j: FamilyPJob) -> bool:
        return j.label is B.GPU

    assert np.median(_class_values(jobs, "dram_active", hbm)) > np.median(_class_values(jobs, "dram_active", gpu))
    assert np.median(_class_values(jobs, "tensor_active", hbm)) < np.median(_class_values(jobs, "tensor_active", gpu))


def test_cpu_bound_jobs_run_their_cgroup_hot(jobs: list[FamilyPJob]) -> None:
    throttled = _class_values(jobs, "cpu_throttled_frac", lambda j: j.mechanism == "throttled")
    others = _class_values(jobs, "cpu_throttled_frac", lambda j: j.label is not B.CPU)
    assert throttled and min(throttled) > 0.3 and np.median(others) < min(throttled)


def test_rdma_traffic_shows_only_on_infiniband_ports(jobs: list[FamilyPJob]) -> None:
    network = [j for j in jobs if j.mechanism == "network" and any("ib_rx_bps" in p.signals for p in j.window.pods)]
    assert network
    for job in network:
        assert (_mean(job, "ib_rx_bps") or 0.0) > 1e8
