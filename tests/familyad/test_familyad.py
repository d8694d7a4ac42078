"""Family AD: interface, determinism, balance, the contract's names and units, and labels that follow physics."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyad import FamilyADJob, generate_family_ad
from bottleneck_operator_dev.familyad.cluster import draw_setup
from bottleneck_operator_dev.familyad.dynamics import draw_timeline
from bottleneck_operator_dev.familyad.exporters import RATIOS, counter_track
from bottleneck_operator_dev.familyad.label import read_label
from bottleneck_operator_dev.familyad.stations import compute_demands
from bottleneck_operator_dev.familyad.workload import draw_workload

START = 1_700_000_000.0
PROF = {Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyADJob]:
    return generate_family_ad(seed=1, n=60, start=START)


def _tag(job: FamilyADJob, key: str) -> str:
    (value,) = [t.split(":", 1)[1] for t in job.tags if t.startswith(f"{key}:")]
    return value


def _mean(job: FamilyADJob, signal: str) -> float:
    values = [p.signals[signal] for p in job.window.pods if signal in p.signals]
    return float(np.nanmean(np.concatenate(values))) if values else float("nan")


def _physics(mech: Mechanism, seed: int, **changes: object) -> tuple[Bottleneck, Mechanism]:
    """Label of one leaned draw, with some of its setup replaced."""
    rng = np.random.default_rng(seed)
    wl = draw_workload(rng, mech, True)
    su = dataclasses.replace(draw_setup(rng, mech, True, wl, 30.0), **changes)  # type: ignore[arg-type]
    tl = draw_timeline(rng, START, 30.0, su.samples, su.scrape_s, su.neighbours)
    lab = read_label(compute_demands(wl, su, tl), su, tl)
    return lab.label, lab.mechanism


def test_negative_n_is_refused() -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_ad(1, -1, start=START)


@pytest.mark.parametrize("step", [0.0, -30.0])
def test_non_positive_step_is_refused(step: float) -> None:
    with pytest.raises(ValueError, match="step must be"):
        generate_family_ad(1, 3, start=START, step=step)


def test_no_jobs_for_zero() -> None:
    assert generate_family_ad(1, 0, start=START) == []


def test_same_seed_same_jobs(jobs: list[FamilyADJob]) -> None:
    again = generate_family_ad(seed=1, n=10, start=START)
    assert all(same_job(a, b) for a, b in zip(jobs[:10], again, strict=True))


def test_another_seed_other_jobs(jobs: list[FamilyADJob]) -> None:
    other = generate_family_ad(seed=2, n=10, start=START)
    assert not any(same_job(a, b) for a, b in zip(jobs[:10], other, strict=True))


def test_a_job_does_not_depend_on_n(jobs: list[FamilyADJob]) -> None:
    few = generate_family_ad(seed=1, n=7, start=START)
    assert all(same_job(a, b) for a, b in zip(few, jobs[:7], strict=True))


def test_classes_come_out_balanced(jobs: list[FamilyADJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(Bottleneck) - {Bottleneck.UNKNOWN}
    assert max(counts.values()) - min(counts.values()) <= 1


def test_mechanisms_belong_to_their_class(jobs: list[FamilyADJob]) -> None:
    for j in jobs:
        assert j.label is not Bottleneck.UNKNOWN
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]


def test_both_memory_mechanisms_occur(jobs: list[FamilyADJob]) -> None:
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}


def test_gpu_and_interconnect_mechanisms_occur(jobs: list[FamilyADJob]) -> None:
    seen = {j.mechanism for j in jobs}
    assert {Mechanism.COMPUTE, Mechanism.LAUNCH_BOUND, Mechanism.PCIE, Mechanism.NETWORK} <= seen


def test_signal_names_are_the_contracts(jobs: list[FamilyADJob]) -> None:
    for j in jobs:
        for p in j.window.pods:
            assert set(p.signals) <= set(SIGNALS)
            assert all(len(v) == len(j.window.timestamps) for v in p.signals.values())


def test_units_are_plausible(jobs: list[FamilyADJob]) -> None:
    for j in jobs:
        for p in j.window.pods:
            for name, values in p.signals.items():
                finite = values[np.isfinite(values)]
                unit = SIGNALS[name].unit
                if unit == "ratio":
                    # rate() over jittered scrapes may overshoot a saturated time counter a little, as it does in Prometheus
                    top = 1.05 if SIGNALS[name].kind is Kind.COUNTER and name not in RATIOS else 1.0
                    assert ((finite >= 0) & (finite <= top)).all(), name
                if unit in ("B/s", "1/s", "cores", "procs", "W", "MHz", "B"):
                    assert (finite >= 0).all(), name
            if "power_w" in p.signals and "power_limit_w" in p.signals:
                assert np.nanmax(p.signals["power_w"]) <= np.nanmax(p.signals["power_limit_w"]) + 1e-6


def test_counters_only_fall_at_a_drawn_reset() -> None:
    t = np.arange(0.0, 600.0, 2.5)
    rates = np.random.default_rng(3).uniform(0.0, 5.0, size=(4, t.size))
    at = np.arange(1.0, 600.0, 15.0)
    plain = counter_track(rates, t, at, 100.0, None)
    assert (np.diff(plain, axis=-1) >= 0).all()
    reset = counter_track(rates, t, at, 100.0, 300.0)
    drops = (np.diff(reset, axis=-1) < 0).sum(axis=-1)
    assert (drops == 1).all()


def test_dev_only_jobs_carry_no_prof_fields(jobs: list[FamilyADJob]) -> None:
    dev = [j for j in jobs if _tag(j, "fields") == "dev"]
    full = [j for j in jobs if _tag(j, "fields") == "full"]
    assert dev and full
    for j in dev:
        assert not any(SIGNALS[n].family in PROF for p in j.window.pods for n in p.signals)
        assert "no PROF fields" in j.window.quality.notes
    for j in full:
        assert all("sm_active" in p.signals and "tensor_active" in p.signals for p in j.window.pods)


def test_windows_are_long_enough(jobs: list[FamilyADJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.start == START and w.timestamps[0] == START
        assert np.allclose(np.diff(w.timestamps), w.step)
        assert len(w.timestamps) >= 20
        assert w.quality.scrape_interval is not None
        assert w.duration / w.quality.scrape_interval >= 19


def test_quality_is_what_the_pods_carry(jobs: list[FamilyADJob]) -> None:
    for j in jobs:
        families, coverage = families_and_coverage(j.window.pods)
        assert j.window.quality.families == families
        assert j.window.quality.coverage == pytest.approx(coverage)
        assert j.window.quality.scrape_interval == float(_tag(j, "scrape").rstrip("s"))


def test_storage_that_cannot_feed_the_job_is_io() -> None:
    for seed in range(5):
        label, mech = _physics(Mechanism.COMPUTE, seed, storage_gbps=1e-4, cache_hit=0.0)
        assert label is Bottleneck.IO and mech in MECHANISMS[Bottleneck.IO]


def test_a_tiny_cpu_quota_throttles_the_loader() -> None:
    for seed in range(5):
        label, mech = _physics(Mechanism.COMPUTE, seed, cpu_limit=1e-3, workers=8)
        assert (label, mech) == (Bottleneck.CPU, Mechanism.THROTTLED)


def test_a_slow_fabric_makes_a_multi_node_job_network_bound() -> None:
    for seed in range(5):
        label, mech = _physics(Mechanism.NETWORK, seed, pods=4, fabric_eff=1e-4, storage_gbps=1e3, cache_hit=0.9)
        assert (label, mech) == (Bottleneck.INTERCONNECT, Mechanism.NETWORK)


def test_signals_follow_the_label(jobs: list[FamilyADJob]) -> None:
    io = [_mean(j, "gpu_util") for j in jobs if j.label is Bottleneck.IO]
    compute = [_mean(j, "gpu_util") for j in jobs if j.mechanism == Mechanism.COMPUTE.value]
    assert np.median(io) < 0.6 < np.median(compute)
    throttled = [_mean(j, "cpu_throttled_frac") for j in jobs if j.mechanism == Mechanism.THROTTLED.value]
    assert np.nanmedian(throttled) > 0.5


def test_tags_name_the_draw(jobs: list[FamilyADJob]) -> None:
    for j in jobs:
        assert int(_tag(j, "pods")) == len(j.window.pods)
        assert all(int(_tag(j, "gpus-per-pod")) == p.gpu_count for p in j.window.pods)
        assert all(_tag(j, "gpu") in p.node for p in j.window.pods if p.node)
        if _tag(j, "cpu-limit") == "none":
            assert not any("cpu_throttled_frac" in p.signals or "cpu_limit_cores" in p.signals for p in j.window.pods)
        rdma = _tag(j, "fabric").startswith(("ib-", "roce-"))
        if not rdma:
            assert not any("ib_rx_bps" in p.signals for p in j.window.pods)
