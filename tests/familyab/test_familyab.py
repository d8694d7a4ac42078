"""Family AB: interface, determinism, balance, the contract's names and units, and labels that
follow the physics of the drawn configuration."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyab import FamilyABJob, generate_family_ab
from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.exporters import Timeline, counter_samples, restart_counters
from bottleneck_operator_dev.familyab.hardware import GPUS, Nic, NodeType, storage
from bottleneck_operator_dev.familyab.label import label_of
from bottleneck_operator_dev.familyab.models import MODELS, Model
from bottleneck_operator_dev.familyab.stages import compute_stages

START = 1_700_000_000.0
PROF_FAMILIES = {f for f in Family if f.value.startswith("dcgm_prof")}


@pytest.fixture(scope="module")
def family() -> list[FamilyABJob]:
    return generate_family_ab(11, 100, start=START)


def tag(job: FamilyABJob, key: str) -> str:
    (value,) = [t.split(":", 1)[1] for t in job.tags if t.startswith(key + ":")]
    return value


def gains(job: FamilyABJob) -> dict[str, float]:
    return {t[5:].split("=")[0]: float(t.split("=")[1]) for t in job.tags if t.startswith("gain:")}


def model(name: str) -> Model:
    (found,) = [m for m in MODELS if m.name == name]
    return found


def config(**changes: object) -> Config:
    """A single-node ResNet-50 Job with everything generous; tests change what they test."""
    fast = storage("nvme", 6.0, 0.0001)
    base = Config(
        model=model("resnet50"),
        batch=256,
        cpu_ms=8.0,
        hbm_scale=1.0,
        gpu=GPUS["a100"],
        node=NodeType(8, 128, 1024.0),
        gpus_per_pod=8,
        pods=1,
        pods_per_node=1,
        nic=Nic("ib", 200.0, 8, True),
        net_eff=0.9,
        gdr=True,
        arch="ddp",
        grad_bytes=4.0,
        storage=fast,
        storage_share=1.0,
        streams=1,
        fmt="shards",
        cached=0.95,
        workers=12,
        cpu_limit=None,
        mem_limit_gib=None,
        precision="amp",
        dali=False,
        pinned=True,
        launch_us=1.0,
        neighbours=0,
        nb_cpu=0.0,
        nb_disk_bps=0.0,
        nb_net_bps=0.0,
        nb_rdma_bps=0.0,
        nb_mem_gib=0.0,
        power_cap=1.0,
        clock_sigma=0.01,
        base_gib=40.0,
        worker_gib=1.0,
        host_gib=0.0,
        swap=False,
        ckpt_every_s=3600.0,
        ckpt_storage=fast,
        eval_every_s=0.0,
        eval_s=0.0,
        overlap_comm=0.8,
        overlap_h2d=0.9,
        coupling=0.1,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def physics(cfg: Config) -> tuple[Bottleneck, Mechanism]:
    lab = label_of(cfg, compute_stages(cfg))
    return lab.bottleneck, lab.mechanism


def test_negative_n_and_non_positive_step_are_refused() -> None:
    with pytest.raises(ValueError, match="n must"):
        generate_family_ab(1, -1, start=START)
    for step in (0.0, -30.0):
        with pytest.raises(ValueError, match="step must"):
            generate_family_ab(1, 3, start=START, step=step)
    assert generate_family_ab(1, 0, start=START) == []


def test_same_seed_same_jobs_other_seed_other_jobs() -> None:
    a = generate_family_ab(7, 10, start=START)
    b = generate_family_ab(7, 10, start=START)
    c = generate_family_ab(8, 10, start=START)
    assert all(same_job(x, y) for x, y in zip(a, b, strict=True))
    assert not all(same_job(x, y) for x, y in zip(a, c, strict=True))


def test_a_job_does_not_depend_on_the_family_size() -> None:
    small = generate_family_ab(5, 7, start=START)
    large = generate_family_ab(5, 13, start=START)
    assert all(same_job(x, y) for x, y in zip(small, large[:7], strict=True))


def test_windows_start_at_start_on_the_step_grid() -> None:
    (job,) = generate_family_ab(2, 1, start=START, step=20.0)
    ts = job.window.timestamps
    assert ts[0] == START == job.window.start
    assert np.allclose(np.diff(ts), 20.0)
    assert job.window.step == 20.0 and job.window.end == ts[-1]


def test_classes_come_out_balanced(family: list[FamilyABJob]) -> None:
    counts = {c: sum(j.label is c for j in family) for c in CLASSES}
    assert counts == dict.fromkeys(CLASSES, 20)


def test_each_block_of_five_intends_every_class_once(family: list[FamilyABJob]) -> None:
    for i in range(0, len(family), 5):
        assert sorted(tag(j, "intent") for j in family[i : i + 5]) == sorted(c.value for c in CLASSES)


def test_labels_are_classes_and_mechanisms_belong_to_them(family: list[FamilyABJob]) -> None:
    for job in family:
        assert job.label in CLASSES
        assert Mechanism(job.mechanism) in MECHANISMS[job.label]


def test_both_memory_mechanisms_occur(family: list[FamilyABJob]) -> None:
    found = {j.mechanism for j in family if j.label is Bottleneck.MEMORY}
    assert found == {"host-memory-pressure", "hbm-bandwidth"}


def test_the_label_is_the_largest_gain_and_hard_marks_near_ties(family: list[FamilyABJob]) -> None:
    for job in family:
        g = sorted(gains(job).items(), key=lambda kv: kv[1], reverse=True)
        assert g[0][0] == job.label.value
        assert ("hard" in job.tags) == (g[0][1] - g[1][1] < 0.05)


def test_signals_are_the_contracts_and_carry_its_families(family: list[FamilyABJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            assert set(pod.signals) <= set(SIGNALS)
            assert all(v.shape == job.window.timestamps.shape for v in pod.signals.values())
        families, coverage = families_and_coverage(job.window.pods)
        assert job.window.quality.families == families
        assert job.window.quality.coverage == coverage > 0.5
        assert job.window.quality.scrape_interval == float(tag(job, "scrape").rstrip("s"))


def test_units_are_plausible(family: list[FamilyABJob]) -> None:
    for job in family:
        gpu = GPUS[tag(job, "gpu")]
        for pod in job.window.pods:
            assert pod.gpu_model == gpu.model_name and pod.gpu_count == int(tag(job, "gpus-per-pod"))
            for name, values in pod.signals.items():
                finite = values[np.isfinite(values)]
                assert (finite >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (finite <= 1).all(), name
                if SIGNALS[name].unit == "B/s":
                    assert (finite < 2e12).all(), name
            power = pod.signals["power_w"]
            assert np.nanmax(power) < gpu.tdp_w * 1.15 and np.nanmin(power) > 0.1 * gpu.tdp_w
            if "cpu_cores" in pod.signals and "node_cpus" in pod.signals:
                assert np.nanmax(pod.signals["cpu_cores"]) <= np.nanmax(pod.signals["node_cpus"]) * 1.1


def test_windows_hold_at_least_twenty_scrapes(family: list[FamilyABJob]) -> None:
    for job in family:
        scrape = float(tag(job, "scrape").rstrip("s"))
        assert job.window.duration >= 20 * scrape and len(job.window.timestamps) >= 20


def test_dev_only_jobs_carry_no_prof_fields(family: list[FamilyABJob]) -> None:
    dev = [j for j in family if tag(j, "fieldset") == "dev"]
    full = [j for j in family if tag(j, "fieldset") == "full" and GPUS[tag(j, "gpu")].prof != "none"]
    assert dev and full
    for job in dev:
        assert not job.window.quality.families & (PROF_FAMILIES | {Family.DCGM_POWER_CLOCKS})
        assert "no PROF fields" in job.window.quality.notes
    for job in full:
        assert all("sm_active" in p.signals and "power_limit_w" in p.signals for p in job.window.pods)


def test_pre_volta_gpus_have_no_prof_fields_whatever_the_field_set() -> None:
    jobs = [j for j in generate_family_ab(4, 150, start=START) if tag(j, "gpu") == "p100"]
    assert jobs
    assert all(not j.window.quality.families & PROF_FAMILIES for j in jobs)


def test_counters_only_drop_where_a_reset_is_drawn() -> None:
    rng = np.random.default_rng(0)
    phase = np.zeros(600, dtype=np.int8)
    phase[200:260] = 3
    tl = Timeline(0.0, phase, (200.0,), (260.0,))
    times = np.arange(0.0, 600.0, 15.0)
    cum = tl.cumulative(times)
    values = counter_samples(rng, "cpu_cores", np.asarray([4.0, 2.0, 3.0, 0.0]), cum, 1e6)
    assert (np.diff(values) >= 0).all()
    reset = restart_counters(values, times, tl.t0, tl.restarts_end)
    drops = np.flatnonzero(np.diff(reset) < 0)
    assert drops.size == 1 and times[drops[0] + 1] >= 260.0 and reset[drops[0] + 1] < 1e4


def test_shares_of_time_never_outrun_the_clock() -> None:
    rng = np.random.default_rng(1)
    tl = Timeline(0.0, np.zeros(900, dtype=np.int8), (), ())
    times = np.arange(0.0, 900.0, 7.0)
    values = counter_samples(rng, "node_psi_io_some", np.ones(4), tl.cumulative(times), 0.0)
    assert (np.diff(values) <= np.diff(times) + 1e-9).all()


def test_storage_that_cannot_feed_the_gpus_is_io() -> None:
    slow = storage("nfs", 0.4, 0.002)
    assert physics(config(storage=slow, storage_share=0.3, cached=0.0, fmt="files")) == (
        Bottleneck.IO,
        Mechanism.NETWORK_STORAGE,
    )
    assert physics(config(storage=storage("sata", 0.5, 0.0003), cached=0.0))[0] is Bottleneck.IO
    assert physics(config())[0] is not Bottleneck.IO


def test_cpu_starved_loaders_are_cpu_with_the_binding_cause() -> None:
    assert physics(config(workers=1)) == (Bottleneck.CPU, Mechanism.TOO_FEW_WORKERS)
    assert physics(config(cpu_limit=16.0)) == (Bottleneck.CPU, Mechanism.THROTTLED)
    assert physics(config(nb_cpu=120.0)) == (Bottleneck.CPU, Mechanism.SATURATED)


def test_slow_networks_and_pcie_are_interconnect() -> None:
    gpt = model("gpt-1.3b")
    eth = Nic("eth", 25.0, 1, False)
    multi = config(model=gpt, batch=2, pods=4, nic=eth, net_eff=0.5, gdr=False, overlap_comm=0.3)
    assert physics(multi) == (Bottleneck.INTERCONNECT, Mechanism.NETWORK)
    gnn = config(model=model("graphsage"), batch=2048, gpu=GPUS["t4"], gpus_per_pod=1, pinned=False, cpu_ms=0.01)
    assert physics(gnn) == (Bottleneck.INTERCONNECT, Mechanism.PCIE)


def test_memory_bound_jobs_are_memory() -> None:
    tight = config(mem_limit_gib=60.0, workers=12, worker_gib=2.0)
    assert physics(tight) == (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE)
    dlrm = config(model=model("dlrm"), batch=16384, gpus_per_pod=1, arch="a2a", cpu_ms=0.001, gpu=GPUS["h100"])
    assert physics(dlrm) == (Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH)


def test_compute_and_launch_bound_jobs_are_gpu() -> None:
    fp32 = config(gpu=GPUS["v100"], precision="fp32", model=model("vit-b16"), batch=64)
    assert physics(fp32) == (Bottleneck.GPU, Mechanism.COMPUTE)
    tiny = config(model=model("rl-policy"), batch=64, gpus_per_pod=1, launch_us=15.0, cpu_ms=0.02)
    assert physics(tiny) == (Bottleneck.GPU, Mechanism.LAUNCH_BOUND)


def test_tags_name_the_draw(family: list[FamilyABJob]) -> None:
    keys = ("kind", "model", "gpu", "pods", "nodes", "net", "storage", "format", "workers", "cpu-limit")
    keys += ("mem-limit", "precision", "neighbours", "power-cap", "scrape", "fieldset", "draw", "tries")
    for job in family:
        assert all(tag(job, key) for key in keys)
        assert len(job.window.pods) == int(tag(job, "pods"))
        assert len({p.node for p in job.window.pods}) == int(tag(job, "nodes"))
        assert job.name.startswith(tag(job, "model"))
    assert {tag(j, "draw") for j in family} == {"fleet", "steered"}


def test_six_hundred_jobs_take_well_under_a_minute() -> None:
    began = time.process_time()
    generate_family_ab(9, 120, start=START)
    assert time.process_time() - began < 10.0  # 600 would take five times as long
