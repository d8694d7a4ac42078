"""Family AO: determinism, the interface's contract, the exporters' semantics and the labelling."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyao import FamilyAOJob, generate_family_ao
from bottleneck_operator_dev.familyao.activity import JobDraws, gpu_series
from bottleneck_operator_dev.familyao.cluster import DCGM_SCRAPES
from bottleneck_operator_dev.familyao.exporters import _counters
from bottleneck_operator_dev.familyao.hardware import Sharing
from bottleneck_operator_dev.familyao.plan import draw_plan
from bottleneck_operator_dev.familyao.steps import Causes, StageTimes, account, label
from bottleneck_operator_dev.familyao.timeline import PodTrack

PROFILING = {Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAOJob]:
    return generate_family_ao(7, 100)


def _same(a: FamilyAOJob, b: FamilyAOJob) -> bool:
    if (a.name, a.label, a.mechanism, a.tags) != (b.name, b.label, b.mechanism, b.tags):
        return False
    if len(a.window.pods) != len(b.window.pods) or a.window.quality != b.window.quality:
        return False
    for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
        if set(pa.signals) != set(pb.signals):
            return False
        if not all(np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True) for k in pa.signals):
            return False
    return True


def test_a_seed_gives_the_same_jobs() -> None:
    a, b = generate_family_ao(3, 10), generate_family_ao(3, 10)
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))
    assert not _same(a[0], generate_family_ao(4, 1)[0])


def test_job_i_does_not_depend_on_n() -> None:
    few, many = generate_family_ao(11, 7), generate_family_ao(11, 23)
    assert all(_same(x, y) for x, y in zip(few, many[:7], strict=True))


@pytest.mark.parametrize(("n", "step", "word"), [(-1, 30.0, "n"), (5, 0.0, "step"), (5, -2.0, "step")])
def test_bad_arguments_raise_naming_them(n: int, step: float, word: str) -> None:
    with pytest.raises(ValueError, match=rf"^{word} must"):
        generate_family_ao(0, n, step=step)
    assert generate_family_ao(0, 0) == []


def test_classes_are_balanced(jobs: list[FamilyAOJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert all(12 <= counts[c] <= 28 for c in CLASSES), counts


def test_labels_and_mechanisms_are_the_contract_s(jobs: list[FamilyAOJob]) -> None:
    for j in jobs:
        assert j.label in CLASSES and j.label is not Bottleneck.UNKNOWN
        assert j.mechanism in MECHANISMS[j.label]
    assert len({j.mechanism for j in jobs}) >= 8


def test_windows_use_contract_names_and_consistent_shapes(jobs: list[FamilyAOJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.job == j.name and w.namespace == j.namespace
        assert np.all(np.diff(w.timestamps) == w.step) and w.start == w.timestamps[0] and w.end == w.timestamps[-1]
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval in DCGM_SCRAPES
        for pod in w.pods:
            assert set(pod.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape for v in pod.signals.values())


def test_counter_rates_are_never_negative(jobs: list[FamilyAOJob]) -> None:
    for j in jobs:
        for pod in j.window.pods:
            for name, v in pod.signals.items():
                if SIGNALS[name].kind is Kind.COUNTER:
                    assert np.all(v[np.isfinite(v)] >= 0), (j.name, name)


def test_counters_are_monotone_outside_drawn_resets() -> None:
    rng = np.random.default_rng(0)
    rates = rng.uniform(0, 5, size=(3, 200))
    cum = _counters(rates, [50, 120], rng)
    drops = {int(k) + 1 for k in np.nonzero(np.diff(cum, axis=-1) < 0)[1]}
    assert drops <= {50, 120} and 50 in drops
    assert np.all(np.diff(cum[:, 51:120], axis=-1) >= 0)


def test_dev_only_jobs_carry_no_profiling_fields(jobs: list[FamilyAOJob]) -> None:
    dev_only = [j for j in jobs if "fields-dev-only" in j.tags]
    assert dev_only
    for j in dev_only:
        assert not (j.window.quality.families & PROFILING)
        for pod in j.window.pods:
            assert not any(SIGNALS[n].family in PROFILING for n in pod.signals)


def test_mig_jobs_lack_gpu_util(jobs: list[FamilyAOJob]) -> None:
    mig = [j for j in generate_family_ao(5, 150) if "mig" in j.tags]
    assert mig
    for j in mig:
        assert all("gpu_util" not in p.signals for p in j.window.pods)


def test_a_shared_device_s_counters_count_the_other_tenant() -> None:
    plan = draw_plan(np.random.default_rng(1), Bottleneck.GPU)
    plan = dataclasses.replace(plan, sharing=Sharing.TIME_SLICED, sm_share=0.7, mem_share=0.7, tenant_load=0.0)
    n = 10
    track = PodTrack("p", np.ones(n, dtype=bool), np.full(n, 0.5), np.ones(n), plan.clock)
    draws = JobDraws(0.6, 0.9, 0.4, 1e6, 1e11, False, -1)
    alone = gpu_series(plan, account(plan.times), track, draws)
    shared = gpu_series(dataclasses.replace(plan, tenant_load=0.5), account(plan.times), track, draws)
    for name in ("gpu_util", "sm_active", "dram_active"):
        assert np.all(shared[name] > alone[name])


def test_too_short_jobs_exist_and_are_tagged() -> None:
    many = generate_family_ao(2, 150)
    short = [j for j in many if "too-short" in j.tags]
    assert short
    assert all(j.window.timestamps.size < 20 for j in short)
    assert all(j.window.timestamps.size >= 60 for j in many if "too-short" not in j.tags)


def test_rdma_traffic_is_on_infiniband_ports_not_netdev(jobs: list[FamilyAOJob]) -> None:
    rdma = [j for j in jobs if {"fabric-infiniband", "fabric-roce"} & set(j.tags)]
    tcp = [j for j in jobs if "fabric-tcp" in j.tags]
    assert rdma and tcp
    for j in rdma:
        for pod in j.window.pods:
            assert np.nanmean(pod.signals["ib_rx_bps"]) > 1e6, j.name  # the infiniband collector is on
    for j in tcp:
        for pod in j.window.pods:
            if "ib_rx_bps" in pod.signals:  # an idle HCA: the collectives went over netdev
                assert np.nanmean(pod.signals["ib_rx_bps"]) < 1e4
            assert np.nanmean(pod.signals["node_net_rx_bps"]) > 1e6


BASE = {"io": 0.05, "cpu": 0.05, "h2d": 0.01, "launch": 0.01, "compute": 0.2, "hbm": 0.05, "comm": 0.02, "hostmem": 0.0}
CAUSES = Causes(storage_local=False, cpu_cause=Mechanism.THROTTLED, comm_path="network")


@pytest.mark.parametrize(
    ("change", "cls", "mech"),
    [
        ({}, Bottleneck.GPU, Mechanism.COMPUTE),
        ({"compute": 0.01, "launch": 0.3}, Bottleneck.GPU, Mechanism.LAUNCH_BOUND),
        ({"io": 0.6}, Bottleneck.IO, Mechanism.NETWORK_STORAGE),
        ({"cpu": 0.5}, Bottleneck.CPU, Mechanism.THROTTLED),
        ({"comm": 0.9}, Bottleneck.INTERCONNECT, Mechanism.NETWORK),
        ({"h2d": 0.8}, Bottleneck.INTERCONNECT, Mechanism.PCIE),
        ({"hbm": 0.5}, Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
        ({"hostmem": 0.4}, Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
    ],
)
def test_the_counterfactual_names_the_stage_whose_removal_gains_most(
    change: dict[str, float], cls: Bottleneck, mech: Mechanism
) -> None:
    times = StageTimes(**(BASE | change), h2d_overlap=0.5, comm_overlap=0.5)
    got = label(times, CAUSES)
    assert (got.bottleneck, got.mechanism) == (cls, mech)
    assert not got.hard


def test_overlap_hides_a_stage_and_close_calls_are_hard() -> None:
    # collectives shorter than the backward pass are hidden by DDP's overlap: compute still bounds
    hidden = StageTimes(**(BASE | {"comm": 0.12}), h2d_overlap=0.5, comm_overlap=0.9)
    assert label(hidden, CAUSES).bottleneck is Bottleneck.GPU
    # input pipeline and device nearly equal: whichever wins, the call is close
    close = StageTimes(**(BASE | {"io": 0.21}), h2d_overlap=0.5, comm_overlap=0.9)
    assert label(close, CAUSES).hard
