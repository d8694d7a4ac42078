"""Each window is what the data layer would hand over: shapes, grid, names, units, counters."""

from __future__ import annotations

import numpy as np
from tests.familyd.conftest import START, STEP

from bottleneck_operator.contract.signals import SIGNALS, Family, signals_of
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyd.job import Simulated

Family_D = list[tuple[Bottleneck, str, Simulated]]


def test_windows_are_on_the_step_grid_with_20_to_120_samples(simulated: Family_D) -> None:
    for _, _, sim in simulated:
        w = sim.window
        assert 20 <= w.timestamps.size <= 120
        np.testing.assert_array_equal(w.timestamps, START + STEP * np.arange(w.timestamps.size))
        assert (w.start, w.end, w.step) == (START, w.timestamps[-1], STEP)


def test_pods_and_gpus_within_the_family_limits(simulated: Family_D) -> None:
    pods = [len(sim.window.pods) for _, _, sim in simulated]
    gpus = [p.gpu_count for _, _, sim in simulated for p in sim.window.pods]
    assert min(pods) >= 1 and max(pods) <= 16 and len(set(pods)) >= 4
    assert min(gpus) >= 1 and max(gpus) <= 8 and len(set(gpus)) >= 3


def test_only_contract_signals_each_one_row_of_the_window(simulated: Family_D) -> None:
    for _, _, sim in simulated:
        size = sim.window.timestamps.size
        for pod in sim.window.pods:
            assert pod.signals, "a pod without signals"
            for name, values in pod.signals.items():
                assert name in SIGNALS, name
                assert values.shape == (size,) and values.dtype == np.float64


def test_quality_is_what_the_pods_carry(simulated: Family_D) -> None:
    for _, _, sim in simulated:
        w = sim.window
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == coverage
        assert w.quality.scrape_interval == sim.drawn.setup.exporters.interval["dcgm"]
        assert 5.0 <= w.quality.scrape_interval <= 60.0
        assert coverage > 0.5 and Family.DCGM_DEV in families


def test_signals_follow_the_clusters_field_set(simulated: Family_D) -> None:
    seen = set()
    for _, _, sim in simulated:
        field_set = sim.drawn.setup.exporters.field_set
        names = {n for p in sim.window.pods for n in p.signals}
        prof = set(signals_of(Family.DCGM_PROF)) & names
        seen.add(field_set)
        if field_set == "dev-only":
            assert not prof and not set(signals_of(Family.DCGM_PROF_SM)) & names
        else:
            assert prof == set(signals_of(Family.DCGM_PROF))
        if field_set != "full":
            assert not set(signals_of(Family.DCGM_PROF_SM)) & names
    assert seen == {"dev-only", "default", "full"}


def test_some_clusters_lack_some_exporters(simulated: Family_D) -> None:
    missing = {
        f
        for _, _, sim in simulated
        for f in (Family.SIDECAR, Family.KSM, Family.NODE_PSI, Family.CADVISOR_CFS)
        if f not in sim.window.quality.families
    }
    assert {Family.SIDECAR, Family.CADVISOR_CFS} <= missing


def test_values_are_in_their_units(simulated: Family_D) -> None:
    for _, _, sim in simulated:
        setup = sim.drawn.setup
        for pod in sim.window.pods:
            for name, values in pod.signals.items():
                v = values[np.isfinite(values)]
                assert (v >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (v <= 1.0).all(), (name, v.max())
            power = pod.signals["power_w"]
            assert np.nanmax(power) <= setup.power_cap_w <= setup.board.tdp_w
            assert np.nanmin(power) >= setup.board.idle_w * 0.9
            if "power_limit_w" in pod.signals:
                assert np.nanmax(power) <= np.nanmin(pod.signals["power_limit_w"])
            assert np.nanmax(pod.signals["sm_clock_mhz"]) <= setup.board.boost_mhz
            if "cpu_limit_cores" in pod.signals and "cpu_cores" in pod.signals:
                assert np.nanmax(pod.signals["cpu_cores"]) <= np.nanmax(pod.signals["cpu_limit_cores"]) * 1.02
            if "node_cpus" in pod.signals:
                assert np.nanmax(pod.signals.get("sc_cpu_cores", pod.signals["node_cpus"])) <= setup.node_cpus


def test_clocks_spread_between_gpus_and_samples(simulated: Family_D) -> None:
    capped = [sim for _, _, sim in simulated if sim.drawn.setup.power_cap_w < sim.drawn.setup.board.tdp_w]
    assert capped, "no power-capped cluster in the family"
    spreads = [np.nanstd(p.signals["sm_clock_mhz"]) for sim in capped for p in sim.window.pods]
    assert max(spreads) > 5.0


def test_counters_are_monotone_between_resets(simulated: Family_D) -> None:
    resets = 0
    for _, _, sim in simulated:
        for scrapes in sim.scrapes.values():
            assert np.all(np.diff(scrapes.times) > 0)
            for name, values in scrapes.counters.items():
                drops = np.diff(values, axis=-1) < 0
                restarted = scrapes.resets[name][:, 1:]
                assert not (drops & ~restarted).any(), name
                assert (values >= 0).all(), name
                resets += int((drops & restarted).sum())
    assert resets > 0, "no counter reset anywhere in the family"


def test_gauges_repeat_between_dcgm_collections(simulated: Family_D) -> None:
    # dcgm-exporter collects on its own period: a faster scrape repeats the last collection
    repeats = []
    for _, _, sim in simulated:
        ex = sim.drawn.setup.exporters
        if ex.dcgm_collect >= 2 * ex.interval["dcgm"]:
            clock = sim.scrapes["dcgm"].gauges["DCGM_FI_DEV_SM_CLOCK"]
            repeats.append(float(np.mean(np.diff(clock, axis=-1) == 0)))
    assert repeats and min(repeats) > 0.3
