"""The windows as the data layer would hand them over: grid, names, units, quality."""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familys import FamilySJob, generate_family_s
from bottleneck_operator_dev.familys.catalog import GPUS

from .conftest import START


def test_grid_and_shapes(jobs: list[FamilySJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.start == START == w.timestamps[0] and w.end == w.timestamps[-1]
        assert np.allclose(np.diff(w.timestamps), 30.0) and w.step == 30.0
        assert w.timestamps.size >= 20 and w.pods
        for p in w.pods:
            assert p.gpu_count >= 1 and p.gpu_model in {g.model_name for g in GPUS.values()}
            for name, values in p.signals.items():
                assert name in SIGNALS, name
                assert values.shape == w.timestamps.shape and values.dtype == np.float64


def test_other_step_changes_the_grid() -> None:
    (j,) = generate_family_s(2, 1, start=START, step=15.0)
    assert np.allclose(np.diff(j.window.timestamps), 15.0) and j.window.start == START


def test_units(jobs: list[FamilySJob]) -> None:
    boards = {g.model_name: g for g in GPUS.values()}
    for j in jobs:
        for p in j.window.pods:
            s = p.signals
            for name, values in s.items():
                v = values[np.isfinite(values)]
                if SIGNALS[name].unit == "ratio":
                    assert ((v >= 0) & (v <= 1)).all(), name
                elif name != "mem_limit_bytes":
                    assert (v >= -1e-6).all(), name
            board = boards[p.gpu_model or ""]
            power = s["power_w"]
            limit = s.get("power_limit_w", np.full_like(power, board.tdp_w))
            ok = np.isfinite(power) & np.isfinite(limit)
            assert (power[ok] <= limit[ok] + 1e-9).all() and (power[ok] <= board.tdp_w).all()
            clock = s["sm_clock_mhz"]
            assert (clock[np.isfinite(clock)] <= board.max_clock_mhz).all()


def test_quality_from_the_contract_helpers(jobs: list[FamilySJob]) -> None:
    for j in jobs:
        fams, cov = families_and_coverage(j.window.pods)
        assert j.window.quality.families == fams and j.window.quality.coverage == cov
        assert 0.8 <= cov <= 1.0 and j.window.quality.scrape_interval in (10.0, 15.0, 30.0, 60.0)


def test_variety(jobs: list[FamilySJob]) -> None:
    tags = {t for j in jobs for t in j.tags}
    assert {"fields:dev-only", "fields:default", "fields:full"} <= tags
    assert len({t for t in tags if t.startswith("workload:")}) >= 6
    assert {"hard", "easy"} <= tags
    assert any(len(j.window.pods) > 1 for j in jobs)
