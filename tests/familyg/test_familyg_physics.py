"""Family G's own step model, and what each class's jobs show because of it.

Every expectation here comes from the generator's stage account (familyg/stages.py) and the
exporters' documented meanings; none comes from the project's analysis.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyg.node_view import job_levels
from bottleneck_operator_dev.familyg.stages import Stages, gains, label

Drawn = Any  # (FamilyGJob, Design, raw scrapes), see conftest
B = Bottleneck


def _stages(**kw: float) -> Stages:
    base = dict(
        math=0.3, hbm=0.1, intra=0.0, inter=0.0, overlap=0.8, accum=1, h2d=0.01, h2d_exposed=0.2, read=0.1, cpu=0.1
    )
    base.update(kw)
    return Stages(**base)  # type: ignore[arg-type]


def test_the_longest_pipeline_sets_the_step() -> None:
    fed = _stages()
    assert fed.step == pytest.approx(fed.gpu_side) and fed.gpu_wait == pytest.approx(0.0)
    starved = _stages(read=1.0)
    assert starved.step == pytest.approx(starved.loader) and starved.gpu_wait > 0.5
    assert label(fed)[0] is B.GPU and label(starved)[0] is B.IO
    assert label(_stages(cpu=1.0))[0] is B.CPU


def test_backward_hides_collectives_and_accumulation_amortises_them() -> None:
    hidden = _stages(inter=0.1, overlap=0.9, h2d=0.0)
    assert hidden.exposed_comm == 0.0 and gains(hidden)[B.INTERCONNECT] == pytest.approx(0.0, abs=1e-12)
    exposed = _stages(inter=1.2, overlap=0.5)
    assert label(exposed)[0] is B.INTERCONNECT
    assert label(_stages(inter=1.2, overlap=0.5, accum=16))[0] is B.GPU


def test_memory_covers_hbm_bound_kernels_and_host_pressure() -> None:
    assert label(_stages(math=0.1, hbm=0.5))[0] is B.MEMORY
    stalled = _stages(hostmem=0.6, loader_slow=0.5)
    assert label(stalled)[0] is B.MEMORY
    # removing Memory removes the stall, the loader's slowdown and the HBM-bound kernels together
    assert gains(stalled)[B.MEMORY] == pytest.approx(stalled.step - _stages(hbm=0.0).step)


def test_every_label_is_the_step_models_answer(drawn: list[Drawn]) -> None:
    for job, design, _ in drawn:
        saved = gains(design.stages)
        assert job.label is label(design.stages)[0] is max(saved, key=lambda c: saved[c])
        assert all(v >= -1e-12 for v in saved.values())


def _mean(job: Any, name: str) -> float | None:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals]
    if not rows:
        return None
    return float(np.nanmean(np.concatenate(rows)))


def test_starved_gpus_wait(drawn: list[Drawn]) -> None:
    for job, design, _ in drawn:
        if job.label in (B.IO, B.CPU):
            assert design.stages.gpu_wait >= 0.03
            # GPU_UTIL counts kernel time only: waiting for the loader cannot show as busy
            assert _mean(job, "gpu_util") <= 1 - design.stages.gpu_wait + 0.1
        if job.label is B.GPU:
            assert design.stages.gpu_wait < 0.05


def test_io_bound_jobs_read_at_their_storages_pace(drawn: list[Drawn]) -> None:
    for job, design, _ in drawn:
        if job.label is not B.IO:
            continue
        s = design.cluster.storage
        assert (job.mechanism == "network-storage") == s.remote
        local = _mean(job, "node_disk_busy_frac")
        if s.block and local is not None:
            assert local > 0.3  # the local device is what reads are waiting on
        if s.network:
            assert _mean(job, "fs_read_bps") < 1e6  # NFS/FUSE/HTTP reads are not block I/O


def test_host_memory_pressure_shows_as_pressure_not_oom_alone(drawn: list[Drawn]) -> None:
    seen = 0
    for job, design, _ in drawn:
        if job.mechanism != "host-memory-pressure":
            continue
        node = _mean(job, "node_psi_mem_some")
        if node is not None:
            assert node > 0.01
        pod = _mean(job, "sc_psi_mem_some")
        if pod is None:
            continue
        seen += 1
        assert pod > 0.02 and _mean(job, "sc_majfault_ps") > 10
        if design.cluster.swap:
            assert _mean(job, "sc_swapin_ps") > 0
    assert seen > 0


def test_hbm_bound_jobs_keep_dram_busier_than_compute_bound_ones(drawn: list[Drawn]) -> None:
    def median(mech: str, name: str) -> float:
        vals = [_mean(job, name) for job, _, _ in drawn if job.mechanism == mech]
        return float(np.median([v for v in vals if v is not None]))

    assert median("hbm-bandwidth", "dram_active") > median("compute", "dram_active")
    assert median("hbm-bandwidth", "tensor_active") < median("compute", "tensor_active")


def test_throttled_jobs_are_throttled_and_under_their_limit(drawn: list[Drawn]) -> None:
    for job, design, _ in drawn:
        if job.mechanism != "throttled":
            continue
        assert design.cpu_limit is not None
        assert _mean(job, "cpu_throttled_frac") > 0.4
        assert _mean(job, "cpu_cores") <= design.cpu_limit * 1.05


def test_links_never_carry_more_than_their_capacity(drawn: list[Drawn]) -> None:
    for _, design, _ in drawn[:40]:
        levels = job_levels(design, np.random.default_rng(0)).train
        board, fabric = design.cluster.board, design.cluster.fabric
        assert np.all(levels["nvlink_tx_bps"] <= max(board.nvlink_bps, 0.0) + 1)
        assert np.all(levels["ib_tx_bps"][np.isfinite(levels["ib_tx_bps"])] <= fabric.rate_bps)
        assert np.all(levels["node_net_tx_bps"] <= fabric.rate_bps + 1e10)
        assert np.all(levels["power_w"] <= design.cluster.power_limit_w)
