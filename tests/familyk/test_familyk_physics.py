"""Family K's jobs obey its own step model: the label's stage is the one whose removal helps most,
and each class shows what that stage physically does to the telemetry."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import PodWindow
from bottleneck_operator_dev.familyk import FamilyKJob, generate_family_k
from bottleneck_operator_dev.familyk.plan import MECHANISMS, draw_plan
from bottleneck_operator_dev.familyk.stages import STAGES, Step, bounding_stage, speedups, without


@pytest.fixture(scope="module")
def jobs() -> list[FamilyKJob]:
    return generate_family_k(31, 100, start=1_700_000_000.0, step=30.0)


def _pods(jobs: list[FamilyKJob], label: Bottleneck, mechanism: str | None = None) -> Iterator[PodWindow]:
    for job in jobs:
        if job.label is label and (mechanism is None or job.mechanism == mechanism):
            yield from job.window.pods


def _mean(pod: PodWindow, name: str) -> float:
    return float(np.nanmean(pod.signals[name]))


def _speedup(job: FamilyKJob) -> float:
    return float(next(t for t in job.tags if t.startswith("speedup:")).split(":")[1])


def test_removing_a_stage_never_slows_the_step() -> None:
    step = Step(0.3, 0.5, 0.1, 0.05, 0.02, 0.8, 0.3, 0.2, 0.05, 0.6, 0.7)
    for stage, factor in speedups(step).items():
        assert factor >= 1.0, stage
        assert without(step, stage).time <= step.time
    with pytest.raises(ValueError, match="no stage"):
        without(step, "disk")


def test_an_overlapped_collective_is_exposed_only_beyond_the_compute() -> None:
    hidden = Step(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.3, 0.0, 0.0, 0.5, 0.8)
    assert hidden.time == pytest.approx(1.0)
    assert bounding_stage(hidden)[0] == "compute"
    exposed = Step(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.3, 0.0, 0.0, 1.3, 0.8)
    assert exposed.time == pytest.approx(1.5)
    assert bounding_stage(exposed)[0] == "links"


def test_every_plan_is_labelled_by_its_bounding_stage() -> None:
    rng = np.random.default_rng(4)
    for index, (label, _, stage, _) in enumerate(MECHANISMS):
        for _ in range(5):
            plan = draw_plan(rng, index)
            top, speed, second = bounding_stage(plan.step)
            assert (top, STAGES[top][0]) == (stage, label)
            assert speed == pytest.approx(plan.speedup) and speed > second


def test_moderate_bottlenecks_are_as_common_as_strong_ones(jobs: list[FamilyKJob]) -> None:
    factors = np.array([_speedup(j) for j in jobs])
    moderate = np.mean(factors < 1.5)
    assert 0.3 <= moderate <= 0.7
    assert factors.min() >= 1.05


def test_gpus_wait_when_the_input_or_host_bounds_the_step(jobs: list[FamilyKJob]) -> None:
    # Removing the bound leaves the step at least as long as the GPU lane, so the GPUs run at most
    # 1/speed-up of the step (collectives and waiting in them included).
    checked = 0
    for job in jobs:
        if job.label in (Bottleneck.IO, Bottleneck.CPU):
            for pod in job.window.pods:
                assert _mean(pod, "gpu_util") <= 1.0 / _speedup(job) + 0.08
                checked += 1
    assert checked >= 10


def test_gpu_bound_jobs_keep_their_gpus_busy(jobs: list[FamilyKJob]) -> None:
    # Checkpoint pauses idle the GPUs for minutes; outside them a GPU-bound job's GPUs always run.
    utils = [
        _mean(p, "gpu_util")
        for job in jobs
        if job.label is Bottleneck.GPU and "checkpoint-pauses" not in job.tags
        for p in job.window.pods
    ]
    assert utils and min(utils) >= 0.8


def test_host_memory_pressure_shows_as_pressure_not_oom_alone(jobs: list[FamilyKJob]) -> None:
    seen = 0
    for pod in _pods(jobs, Bottleneck.MEMORY, "host-memory-pressure"):
        for name in ("sc_psi_mem_some", "node_psi_mem_some"):
            if name in pod.signals:
                assert _mean(pod, name) >= 0.03
                seen += 1
        if "node_mem_avail_frac" in pod.signals:
            assert _mean(pod, "node_mem_avail_frac") <= 0.1
    assert seen > 0


def test_hbm_bound_jobs_run_dram_near_its_practical_peak_with_little_tensor_work(jobs: list[FamilyKJob]) -> None:
    # The slowest pod bounds a synchronous job; pods on faster boards wait in the collective.
    seen = 0
    for job in jobs:
        if job.mechanism != "hbm-bandwidth" or "dram_active" not in job.window.pods[0].signals:
            continue
        if "checkpoint-pauses" in job.tags:  # minutes of idle GPUs lower any mean
            continue
        slowest = max(job.window.pods, key=lambda p: _mean(p, "dram_active"))
        assert _mean(slowest, "dram_active") >= 0.45
        assert _mean(slowest, "tensor_active") < _mean(slowest, "dram_active")
        seen += 1
    assert seen > 0


def test_rdma_traffic_shows_on_infiniband_counters_not_netdev(jobs: list[FamilyKJob]) -> None:
    seen = 0
    for job in jobs:
        if job.mechanism != "network-rdma":
            continue
        for pod in job.window.pods:
            if "ib_tx_bps" in pod.signals and "node_net_tx_bps" in pod.signals:
                assert _mean(pod, "ib_tx_bps") > 10 * _mean(pod, "node_net_tx_bps")
                seen += 1
    assert seen > 0


def test_local_disk_readers_read_the_disk_and_object_store_readers_do_not(jobs: list[FamilyKJob]) -> None:
    for job in jobs:
        if job.label is not Bottleneck.IO:
            continue
        for pod in job.window.pods:
            if "node_disk_read_bps" not in pod.signals:
                continue
            if "storage:http-object-store" in job.tags or "storage:http-zstd-shards" in job.tags:
                assert _mean(pod, "node_net_rx_bps") > _mean(pod, "node_disk_read_bps") / 10
            if job.mechanism == "local-disk":
                assert _mean(pod, "node_disk_read_bps") > 1e7
