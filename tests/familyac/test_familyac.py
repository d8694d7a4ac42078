"""Family AC: interface, determinism, balance, signal contract, field sets, and labels following physics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind, signals_of
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyac import FamilyACJob, generate_family_ac, stages, timeline, workload
from bottleneck_operator_dev.familyac import label as lab
from bottleneck_operator_dev.familyac.hardware import GB, GIB
from bottleneck_operator_dev.familyac.models import draw_model
from bottleneck_operator_dev.familyac.sources import counter

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyACJob]:
    return generate_family_ac(1, 60, start=START)


def _tag(job: FamilyACJob, key: str) -> str:
    return next(t.split("=", 1)[1] for t in job.tags if t.startswith(key + "="))


def test_negative_n_is_refused() -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_ac(1, -1, start=START)


@pytest.mark.parametrize("step", [0.0, -5.0])
def test_non_positive_step_is_refused(step: float) -> None:
    with pytest.raises(ValueError, match="step must be"):
        generate_family_ac(1, 1, start=START, step=step)


def test_zero_jobs_is_an_empty_family() -> None:
    assert generate_family_ac(3, 0, start=START) == []


def test_same_seed_same_jobs(jobs: list[FamilyACJob]) -> None:
    again = generate_family_ac(1, 10, start=START)
    assert all(same_job(a, b) for a, b in zip(jobs[:10], again, strict=True))


def test_another_seed_other_jobs(jobs: list[FamilyACJob]) -> None:
    other = generate_family_ac(2, 10, start=START)
    assert not any(same_job(a, b) for a, b in zip(jobs[:10], other, strict=True))


def test_a_job_does_not_depend_on_n(jobs: list[FamilyACJob]) -> None:
    assert same_job(generate_family_ac(1, 8, start=START)[7], jobs[7])
    assert same_job(generate_family_ac(1, 13, start=START)[12], jobs[12])


def test_every_window_starts_at_start_on_the_step_grid() -> None:
    for job in generate_family_ac(4, 3, start=START + 7, step=15.0):
        w = job.window
        assert w.start == START + 7 and w.timestamps[0] == START + 7 and w.step == 15.0
        assert np.allclose(np.diff(w.timestamps), 15.0)


def test_classes_come_in_equal_numbers(jobs: list[FamilyACJob]) -> None:
    counts = {c: sum(j.label is c for j in jobs) for c in CLASSES}
    assert counts == {c: 12 for c in CLASSES}


def test_both_memory_and_both_gpu_mechanisms_occur(jobs: list[FamilyACJob]) -> None:
    mechs = {(j.label, j.mechanism) for j in jobs}
    for m in (Mechanism.HOST_MEMORY_PRESSURE, Mechanism.HBM_BANDWIDTH):
        assert (Bottleneck.MEMORY, m.value) in mechs
    for m in (Mechanism.COMPUTE, Mechanism.LAUNCH_BOUND):
        assert (Bottleneck.GPU, m.value) in mechs


def test_labels_are_classes_and_mechanisms_belong_to_them(jobs: list[FamilyACJob]) -> None:
    for j in jobs:
        assert j.label in CLASSES and j.label is not Bottleneck.UNKNOWN
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]


def test_signal_names_are_the_contracts_and_ratios_are_fractions(jobs: list[FamilyACJob]) -> None:
    for j in jobs:
        for pod in j.window.pods:
            for name, values in pod.signals.items():
                assert name in SIGNALS
                assert values.shape == j.window.timestamps.shape
                finite = values[np.isfinite(values)]
                if SIGNALS[name].unit == "ratio":
                    assert np.all((finite >= 0) & (finite <= 1 + 1e-9)), name
                if SIGNALS[name].kind is Kind.COUNTER:
                    assert np.all(finite >= 0), name  # rates of counters, resets undone


def test_counters_only_rise_unless_a_reset_is_drawn() -> None:
    rng = np.random.default_rng(0)
    t = np.arange(100.0)
    plain = counter(rng, np.cumsum(np.full(100, 3.0)), None, t)
    reset = counter(rng, np.cumsum(np.full(100, 3.0)), 50.0, t)
    assert np.all(np.diff(plain) >= 0)
    assert np.sum(np.diff(reset) < 0) == 1


def test_dev_only_jobs_carry_no_prof_fields(jobs: list[FamilyACJob]) -> None:
    prof = {f for f in Family if f.value.startswith("dcgm_prof")}
    seen = set()
    for j in jobs:
        fields = _tag(j, "fields")
        seen.add(fields)
        families = j.window.quality.families
        if fields == "dev":
            assert not families & prof and Family.DCGM_POWER_CLOCKS not in families
        else:
            assert Family.DCGM_PROF in families
        assert (Family.DCGM_PROF_SM in families) is (fields == "full")
    assert seen == {"dev", "default", "full"}


def test_windows_are_long_enough_and_quality_is_the_contracts(jobs: list[FamilyACJob]) -> None:
    for j in jobs:
        w = j.window
        assert (w.end - w.start) / float(_tag(j, "scrape")) >= 20
        assert (w.end - w.start) / float(_tag(j, "node_scrape")) >= 20
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval == float(_tag(j, "scrape"))
        assert coverage > 0.8


def test_tags_name_the_draw(jobs: list[FamilyACJob]) -> None:
    for j in jobs:
        assert len(j.window.pods) == int(_tag(j, "pods"))
        assert all(p.gpu_count == int(_tag(j, "gpus_per_pod")) for p in j.window.pods)
        gpu = _tag(j, "gpu")
        assert all(p.gpu_model and gpu.split("-")[0] in p.gpu_model for p in j.window.pods)
        assert ("sc_cpu_cores" in j.window.pods[0].signals) is (_tag(j, "sidecar") == "yes")
        assert ("cpu_throttled_frac" in j.window.pods[0].signals) is (_tag(j, "cpu_limit") != "none")


def test_rdma_traffic_shows_on_infiniband_not_netdev(jobs: list[FamilyACJob]) -> None:
    for j in jobs:
        s = j.window.pods[0].signals
        if _tag(j, "fabric") == "tcp":
            assert "ib_rx_bps" not in s
        if _tag(j, "fabric") in ("ib", "roce") and j.mechanism == "network":
            assert np.nanmean(s["ib_rx_bps"]) > np.nanmean(s["node_net_rx_bps"])


def test_object_store_readers_show_no_io_pressure(jobs: list[FamilyACJob]) -> None:
    checked = 0
    for j in jobs:
        s = j.window.pods[0].signals
        if _tag(j, "storage") == "object" and "sc_psi_io_some" in s:
            assert np.nanmean(s["sc_psi_io_some"]) < 0.01
            checked += 1
    assert checked


def _simulate(cfg: workload.Config, seed: int = 0) -> lab.Label:
    rng = np.random.default_rng(seed)
    st = stages.build(cfg, rng)
    return lab.label(timeline.simulate(st, rng, workers=cfg.workers), cfg.storage, st)


def _base(kind: str = "resnet50") -> workload.Config:
    rng = np.random.default_rng(5)
    cfg = workload._fast_input(rng, workload.draw(rng))
    return dataclasses.replace(cfg, model=draw_model(rng, kind), pods=1, gpus_per_pod=1, compiled=True)


def test_storage_that_cannot_feed_the_job_is_io() -> None:
    cfg = dataclasses.replace(_base(), storage="nfs", storage_bw=5e6)
    assert (_simulate(cfg).bottleneck, _simulate(cfg).mechanism) == (Bottleneck.IO, Mechanism.NETWORK_STORAGE)


def test_a_starved_cpu_quota_is_cpu_throttled() -> None:
    cfg = dataclasses.replace(_base(), workers=8, cpu_limit=0.5)
    got = _simulate(cfg)
    assert (got.bottleneck, got.mechanism) == (Bottleneck.CPU, Mechanism.THROTTLED)


def test_a_working_set_over_the_limit_is_host_memory_pressure() -> None:
    base = _base("resnet50")
    cfg = dataclasses.replace(base, mem_limit=base.mem_demand / 1.6, swap=True)
    got = _simulate(cfg)
    assert (got.bottleneck, got.mechanism) == (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE)


def test_a_slow_tcp_fabric_bounds_a_multi_node_all_reduce() -> None:
    base = _base("gpt")
    model = dataclasses.replace(base.model, params=1.3e9, flops=6 * 1.3e9 * 1024, batch=1)
    cfg = dataclasses.replace(base, model=model, pods=4, pods_per_node=1, fabric="tcp", nic_gbps=10.0)
    got = _simulate(cfg)
    assert (got.bottleneck, got.mechanism) == (Bottleneck.INTERCONNECT, Mechanism.NETWORK)


def test_the_critical_path_covers_the_measured_run() -> None:
    cfg = dataclasses.replace(_base(), pods=2, gpus_per_pod=4, storage_bw=2 * GB, mem_demand=10 * GIB)
    rng = np.random.default_rng(3)
    st = stages.build(cfg, rng)
    tl = timeline.simulate(st, rng, workers=cfg.workers)
    assert float(tl.critical.sum()) == pytest.approx(tl.t1 - tl.t0, rel=0.01)


def test_prof_families_are_exactly_the_field_sets() -> None:
    from bottleneck_operator_dev.familyac.dcgm import families

    assert families("dev", True) == (Family.DCGM_DEV,)
    assert Family.DCGM_PROF_NVLINK in families("full", True)
    assert Family.DCGM_PROF_NVLINK not in families("full", False)
    assert set(signals_of(Family.DCGM_PROF)) <= {n for f in families("default", False) for n in signals_of(f)}
