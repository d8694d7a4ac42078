"""Family AN: the fixed interface, the windows' contract, and the counterfactual labelling."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyan import FamilyANJob, generate_family_an
from bottleneck_operator_dev.familyan.generate import build, intent_of
from bottleneck_operator_dev.familyan.stages import StageTimes, is_close_call, label_of, mechanism_of

PROF = {Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyANJob]:
    return generate_family_an(7, 100)


def _same(a: FamilyANJob, b: FamilyANJob) -> bool:
    if (a.namespace, a.name, a.label, a.mechanism, a.tags) != (b.namespace, b.name, b.label, b.mechanism, b.tags):
        return False
    for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
        if set(pa.signals) != set(pb.signals):
            return False
        for k in pa.signals:
            if not np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True):
                return False
    return np.array_equal(a.window.timestamps, b.window.timestamps)


def test_same_seed_same_jobs() -> None:
    first, second = generate_family_an(3, 6), generate_family_an(3, 6)
    assert all(_same(a, b) for a, b in zip(first, second, strict=True))
    other = generate_family_an(4, 6)
    assert [j.name for j in first] != [j.name for j in other]


def test_job_i_does_not_depend_on_n() -> None:
    short, long = generate_family_an(11, 3), generate_family_an(11, 9)
    assert all(_same(a, b) for a, b in zip(short, long[:3], strict=True))


@pytest.mark.parametrize(("n", "step", "word"), [(-1, 30.0, "n"), (5, 0.0, "step"), (5, -30.0, "step")])
def test_bad_arguments_raise_naming_them(n: int, step: float, word: str) -> None:
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        generate_family_an(1, n, step=step)


def test_no_jobs_for_n_zero() -> None:
    assert generate_family_an(1, 0) == []


def test_classes_are_balanced(jobs: list[FamilyANJob]) -> None:
    intents = collections.Counter(intent_of(7, i) for i in range(100))
    assert set(intents.values()) == {20}
    labels = collections.Counter(j.label for j in jobs)
    assert set(labels) == set(CLASSES)
    assert all(12 <= count <= 28 for count in labels.values()), labels


def test_labels_and_mechanisms_are_valid(jobs: list[FamilyANJob]) -> None:
    for job in jobs:
        assert job.label in CLASSES and job.label is not Bottleneck.UNKNOWN
        assert job.mechanism in MECHANISMS[job.label]
        assert job.window.namespace == job.namespace and job.window.job == job.name
    assert len({j.name for j in jobs}) == len(jobs)


def test_windows_follow_the_contract(jobs: list[FamilyANJob]) -> None:
    for job in jobs:
        w = job.window
        assert np.allclose(np.diff(w.timestamps), w.step)
        assert w.start == w.timestamps[0] and w.end == w.timestamps[-1]
        assert w.pods and w.quality.scrape_interval is not None and 5 <= w.quality.scrape_interval <= 60
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        for pod in w.pods:
            assert pod.gpu_count >= 1 and pod.gpu_model
            for name, values in pod.signals.items():
                assert name in SIGNALS, name
                assert values.shape == w.timestamps.shape
                finite = values[np.isfinite(values)]
                assert (finite >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (finite <= 1.0 + 1e-9).all(), name


def test_counters_are_monotone_outside_drawn_resets() -> None:
    resets = 0
    for i in range(40):
        for scr in build(5, i).scrapes:
            for name, values in scr.counters.items():
                drops = np.argwhere(np.diff(values, axis=1) < 0)[:, 1] + 1
                assert set(drops.tolist()) <= set(scr.resets), (scr.exporter, name)
            resets += len(scr.resets)
    assert resets > 0  # some sidecars restarted, and their counters started over


def test_dev_only_jobs_carry_no_profiling_fields() -> None:
    dev_only = [j for j in generate_family_an(2, 60) if "dcgm-fields:dev-only" in j.tags]
    assert dev_only
    for job in dev_only:
        assert not (job.window.quality.families & PROF)
        for pod in job.window.pods:
            assert not any(SIGNALS[name].family in PROF for name in pod.signals)
            assert "gpu_util" in pod.signals


def test_too_short_jobs_exist_and_are_tagged() -> None:
    jobs = generate_family_an(9, 200)
    short = [j for j in jobs if "too-short" in j.tags]
    assert 2 <= len(short) <= 25
    for job in jobs:
        w = job.window
        scrapes = w.duration / max(w.step, w.quality.scrape_interval or 30.0)
        assert ("too-short" in job.tags) == (scrapes < 20)


def test_rdma_collectives_show_on_infiniband_not_netdev() -> None:
    seen = 0
    for job in generate_family_an(13, 80):
        if job.label is not Bottleneck.INTERCONNECT or job.mechanism is not Mechanism.NETWORK:
            continue
        pod = job.window.pods[0]
        both = "ib_tx_bps" in pod.signals and "node_net_tx_bps" in pod.signals and len(job.window.pods) > 1
        if both and np.nanmedian(pod.signals["ib_tx_bps"]) > 1e8:
            assert np.nanmedian(pod.signals["ib_tx_bps"]) > 10 * np.nanmedian(pod.signals["node_net_tx_bps"])
            seen += 1
    assert seen > 0


# --- the counterfactual on hand-built stage times: one pod, one regime unless said otherwise
CASES = [
    (StageTimes(io=1.0, cpu=0.2, flops=0.3, hbm=0.05), Bottleneck.IO, Mechanism.LOCAL_DISK),
    (StageTimes(io=1.0, cpu=0.2, flops=0.3, remote=True), Bottleneck.IO, Mechanism.NETWORK_STORAGE),
    (StageTimes(cpu=1.0, io=0.1, flops=0.4, cpu_bound_by="throttled"), Bottleneck.CPU, Mechanism.THROTTLED),
    (StageTimes(cpu_serial=0.8, flops=0.3, cpu_bound_by="too-few-workers"), Bottleneck.CPU, Mechanism.TOO_FEW_WORKERS),
    (StageTimes(flops=0.3, sync_inter=1.0, overlap=0.5), Bottleneck.INTERCONNECT, Mechanism.NETWORK),
    (StageTimes(flops=0.3, crit_intra=0.8, intra_nvlink=True), Bottleneck.INTERCONNECT, Mechanism.NVLINK),
    (StageTimes(flops=0.3, h2d=0.9), Bottleneck.INTERCONNECT, Mechanism.PCIE),
    (StageTimes(flops=1.0, hbm=0.1, sync_intra=0.2, overlap=0.6, io=0.1, cpu=0.2), Bottleneck.GPU, Mechanism.COMPUTE),
    (StageTimes(flops=0.1, hbm=0.05, launch=1.0), Bottleneck.GPU, Mechanism.LAUNCH_BOUND),
    (StageTimes(flops=0.2, hbm=1.0), Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
    (StageTimes(flops=0.5, host_mem=1.0), Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
]


@pytest.mark.parametrize(("stages", "label", "mechanism"), CASES)
def test_counterfactual_names_the_stage_whose_removal_helps_most(
    stages: StageTimes, label: Bottleneck, mechanism: Mechanism
) -> None:
    regimes = [(600.0, [stages])]
    got, gains = label_of(regimes)
    assert got is label
    assert gains[label] == max(gains.values()) and gains[label] > 1.0
    assert mechanism_of(got, regimes) is mechanism


def test_overlapped_sync_is_not_the_bottleneck() -> None:
    # 0.5 s of gradient sync hides behind 0.6 of a 1.2 s backward: only the compute matters
    regimes = [(600.0, [StageTimes(flops=1.2, sync_inter=0.5, overlap=0.6)])]
    label, gains = label_of(regimes)
    assert label is Bottleneck.GPU and gains[Bottleneck.INTERCONNECT] == pytest.approx(1.0)


def test_a_slow_peer_makes_everyone_wait() -> None:
    fast, slow = StageTimes(flops=0.5, sync_inter=0.2), StageTimes(flops=1.0, sync_inter=0.2)
    label, gains = label_of([(600.0, [fast, slow])])
    assert label is Bottleneck.GPU and gains[Bottleneck.GPU] == pytest.approx(1.2 / 0.2)


def test_pauses_count_only_when_they_dominate() -> None:
    steady = StageTimes(flops=1.0, io=0.2)
    ckpt = StageTimes(pause=1.0)
    assert label_of([(900.0, [steady]), (100.0, [ckpt])])[0] is Bottleneck.GPU
    assert label_of([(100.0, [steady]), (900.0, [ckpt])])[0] is Bottleneck.IO


def test_close_calls_are_flagged() -> None:
    assert is_close_call(label_of([(60.0, [StageTimes(io=1.0, flops=0.95)])])[1])
    assert not is_close_call(label_of([(60.0, [StageTimes(io=0.1, flops=1.0)])])[1])


def test_labels_are_the_counterfactual_of_each_job() -> None:
    for i in range(30):
        built = build(17, i)
        best = max(built.gains, key=lambda c: built.gains[c])
        assert built.job.label is best
        assert ("hard" in built.job.tags) == is_close_call(built.gains)


def test_network_storage_reads_never_show_as_the_pods_disk_reads() -> None:
    seen = 0
    for job in generate_family_an(19, 60):
        if not any(t in job.tags for t in ("storage:nfs", "storage:efs", "storage:object-store")):
            continue
        for pod in job.window.pods:
            if "fs_read_bps" in pod.signals:
                assert np.nanmax(pod.signals["fs_read_bps"]) == pytest.approx(0.0, abs=1.0)
                seen += 1
    assert seen > 0
