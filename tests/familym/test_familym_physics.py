"""Per-class sanity of family M's own step model, and of what its exporters show of it.

Every expectation here follows from the generator's stage model (docs/familym.md), not from any
reading of the telemetry elsewhere in the project.
"""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familym import FamilyMJob
from bottleneck_operator_dev.familym.family import _accepted
from bottleneck_operator_dev.familym.plans import MECHANISMS
from bottleneck_operator_dev.familym.stages import LABELLED, label_of, removal_speedups, removed, timing

CASES = [(cls, mech) for cls in LABELLED for mech in MECHANISMS[cls]]


@pytest.mark.parametrize(("cls", "mechanism"), CASES, ids=[f"{c.value}-{m}" for c, m in CASES])
def test_label_is_the_stage_whose_removal_helps_most(cls: Bottleneck, mechanism: str) -> None:
    rng = np.random.default_rng([99, len(mechanism)])
    for _ in range(4):
        _, stages, _, _, speedups = _accepted(rng, cls, mechanism, 40, 30.0)
        assert label_of(speedups) is cls
        assert speedups[cls] > 1.0
        tm = timing(stages)
        faster = timing(removed(stages, cls))
        assert np.all(faster.step <= tm.step + 1e-12)
        if cls in (Bottleneck.IO, Bottleneck.CPU):
            # An input-bound job's GPUs wait: the loader is slower than the GPU side on the slowest pod.
            slowest = tm.pod_step.argmax(axis=0)
            cols = np.arange(tm.step.size)
            assert np.median(tm.loader[slowest, cols] - tm.gpu_side[slowest, cols]) > 0
        if cls is Bottleneck.GPU:
            assert np.median(tm.gpu_side.max(axis=0) - tm.loader.max(axis=0)) > 0
        if mechanism == "hbm-bandwidth":
            assert np.median((stages.mem_a + stages.mem_b) / tm.kernels) > 0.5


def test_removing_nothing_changes_nothing() -> None:
    rng = np.random.default_rng(3)
    _, stages, training, _, speedups = _accepted(rng, Bottleneck.CPU, "saturated", 30, 30.0)
    assert removal_speedups(stages, training) == speedups
    assert all(v >= 1.0 - 1e-12 for v in speedups.values())


def _median(job: FamilyMJob, name: str) -> float | None:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals and np.isfinite(p.signals[name]).any()]
    return float(np.nanmedian(np.concatenate(rows))) if rows else None


def _jobs(family: list[FamilyMJob], cls: Bottleneck, mechanism: str | None = None) -> list[FamilyMJob]:
    return [j for j in family if j.label is cls and (mechanism is None or j.mechanism == mechanism)]


def test_input_bound_gpus_wait(family_m: list[FamilyMJob]) -> None:
    for job in _jobs(family_m, Bottleneck.IO) + _jobs(family_m, Bottleneck.CPU):
        busy = _median(job, "gr_engine_active")
        if busy is not None and "strength:strong" in job.tags:
            assert busy < 0.75, job.name


def test_host_memory_pressure_shows_as_pressure(family_m: list[FamilyMJob]) -> None:
    jobs = _jobs(family_m, Bottleneck.MEMORY, "host-memory-pressure")
    assert jobs
    for job in jobs:
        psi = _median(job, "sc_psi_mem_some") or _median(job, "node_psi_mem_some")
        faults = _median(job, "node_majfault_ps")
        assert (psi is not None and psi > 0.02) or (faults is not None and faults > 100), job.name


def test_hbm_bound_dram_is_busy(family_m: list[FamilyMJob]) -> None:
    for job in _jobs(family_m, Bottleneck.MEMORY, "hbm-bandwidth"):
        dram = _median(job, "dram_active")
        if dram is not None:
            assert 0.3 < dram <= 0.9, job.name


def test_object_store_readers_wait_on_sockets_not_disks() -> None:
    from bottleneck_operator_dev.familym import generate_family_m

    jobs = [j for j in generate_family_m(8, 100, start=1.0e9) if "storage:object-store" in j.tags]
    assert jobs
    for job in jobs:
        for pod in job.window.pods:
            if "sc_procs_iowait" in pod.signals:
                assert np.nanmax(pod.signals["sc_procs_iowait"]) == 0
            if "sc_psi_io_some" in pod.signals and job.label is Bottleneck.IO:
                assert np.nanmax(pod.signals["sc_psi_io_some"]) == 0


def test_throttled_cpu_jobs_are_throttled(family_m: list[FamilyMJob]) -> None:
    for job in _jobs(family_m, Bottleneck.CPU, "throttled"):
        frac = _median(job, "cpu_throttled_frac") or _median(job, "sc_throttled_frac")
        assert frac is None or frac > 0.1, job.name


def test_too_few_workers_leave_cores_idle(family_m: list[FamilyMJob]) -> None:
    for job in _jobs(family_m, Bottleneck.CPU, "too-few-workers"):
        cores, cpus = _median(job, "cpu_cores"), _median(job, "node_cpus")
        if cores is not None and cpus is not None:
            assert cores < 0.5 * cpus, job.name


def test_network_bound_jobs_move_bytes(family_m: list[FamilyMJob]) -> None:
    for job in _jobs(family_m, Bottleneck.INTERCONNECT, "network"):
        ib, net = _median(job, "ib_rx_bps") or 0.0, _median(job, "node_net_rx_bps") or 0.0
        if "fabric:ib" in job.tags and ib == 0.0:
            continue  # the infiniband collector is off on this cluster: the bytes are invisible
        assert max(ib, net) > 3e8 or not any("node" in str(f) for f in job.window.quality.families), job.name
