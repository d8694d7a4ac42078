"""Family M's windows are well formed: shapes, grid, contract names, units and data quality."""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familym import FamilyMJob
from bottleneck_operator_dev.familym.hardware import BOARDS

BOARD = {b.model: b for b in BOARDS}


def test_shapes_and_grid(family_m: list[FamilyMJob]) -> None:
    for job in family_m:
        w = job.window
        length = w.timestamps.shape[0]
        assert 20 <= length <= 120
        assert np.allclose(np.diff(w.timestamps), w.step)
        assert w.end == w.timestamps[-1]
        assert 1 <= len(w.pods) <= 16
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8
            assert pod.gpu_model in BOARD
            for values in pod.signals.values():
                assert values.shape == (length,)
                assert values.dtype == np.float64


def test_only_contract_signals(family_m: list[FamilyMJob]) -> None:
    for job in family_m:
        for pod in job.window.pods:
            assert set(pod.signals) <= set(SIGNALS)


def test_quality_says_what_the_window_holds(family_m: list[FamilyMJob]) -> None:
    for job in family_m:
        families, coverage = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == families
        assert q.coverage == coverage
        assert q.scrape_interval is not None and 5.0 <= q.scrape_interval <= 60.0


def _finite(job: FamilyMJob, name: str) -> list[np.ndarray]:
    return [p.signals[name][np.isfinite(p.signals[name])] for p in job.window.pods if name in p.signals]


def test_units_in_range(family_m: list[FamilyMJob]) -> None:
    for job in family_m:
        for name, spec in SIGNALS.items():
            for v in _finite(job, name):
                if spec.unit == "ratio":
                    assert np.all((v >= 0.0) & (v <= 1.0)), (job.name, name)
                else:
                    assert np.all(v >= 0.0), (job.name, name)
                if spec.kind is Kind.COUNTER:
                    assert np.all(np.isfinite(v))


def test_power_and_clocks_within_the_board(family_m: list[FamilyMJob]) -> None:
    for job in family_m:
        for pod in job.window.pods:
            board = BOARD[str(pod.gpu_model)]
            power = pod.signals["power_w"]
            assert np.nanmax(power) <= board.tdp_w
            if "power_limit_w" in pod.signals:
                assert np.nanmax(pod.signals["power_limit_w"]) <= board.tdp_w
                assert np.all(power[np.isfinite(power)] <= np.nanmax(pod.signals["power_limit_w"]))
            assert np.nanmax(pod.signals["sm_clock_mhz"]) <= board.max_clock_mhz
            for way in ("pcie_rx_bps", "pcie_tx_bps"):
                if way in pod.signals:
                    assert np.nanmax(pod.signals[way]) <= board.pcie_bps


def test_variety_between_clusters(family_m: list[FamilyMJob]) -> None:
    tags = {t for j in family_m for t in j.tags}
    assert {"dcgm:dev-only", "dcgm:default", "dcgm:full"} <= tags
    assert {t for t in tags if t.startswith("scrape:")} >= {"scrape:15s", "scrape:30s"}
    assert {"strength:barely", "strength:moderate", "strength:strong"} <= tags
    assert len({p.gpu_model for j in family_m for p in j.window.pods}) >= 5
    no_prof = [j for j in family_m if "dcgm:dev-only" in j.tags]
    assert all("tensor_active" not in p.signals for j in no_prof for p in j.window.pods)


def test_exporters_can_be_missing_on_one_node() -> None:
    from bottleneck_operator_dev.familym import generate_family_m

    jobs = generate_family_m(5, 150, start=1.0e9)
    partial = 0
    for job in jobs:
        with_sidecar = [any(k.startswith("sc_") for k in p.signals) for p in job.window.pods]
        partial += any(with_sidecar) and not all(with_sidecar)
    assert partial > 0
