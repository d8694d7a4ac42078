"""Family AK: determinism, balance, the window contract, the exporters' semantics, and the labelling."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyak import FamilyAKJob, generate_family_ak
from bottleneck_operator_dev.familyak.generate import Made, make_job
from bottleneck_operator_dev.familyak.hardware import BOARD_BY_KEY, Fabric, Storage
from bottleneck_operator_dev.familyak.label import label_job
from bottleneck_operator_dev.familyak.loop import draw_noise, steps_for
from bottleneck_operator_dev.familyak.spec import Host, JobSpec, Loader, Model
from bottleneck_operator_dev.familyak.stack import MIN_STEPS

SEED = 20261202
PROF_FAMILIES = {Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyAKJob]:
    return generate_family_ak(SEED, 100)


@pytest.fixture(scope="module")
def made() -> list[Made]:
    return [make_job(SEED + 1, i, 1_700_000_000.0, 30.0) for i in range(25)]


def _same(a: FamilyAKJob, b: FamilyAKJob) -> bool:
    if (a.namespace, a.name, a.label, a.mechanism, a.tags) != (b.namespace, b.name, b.label, b.mechanism, b.tags):
        return False
    if not np.array_equal(a.window.timestamps, b.window.timestamps) or a.window.quality != b.window.quality:
        return False
    for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
        if pa.pod != pb.pod or set(pa.signals) != set(pb.signals):
            return False
        if not all(np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True) for k in pa.signals):
            return False
    return True


def test_a_seed_gives_the_same_jobs() -> None:
    first, second = generate_family_ak(5, 6), generate_family_ak(5, 6)
    assert all(_same(a, b) for a, b in zip(first, second, strict=True))
    assert not _same(generate_family_ak(6, 1)[0], first[0])


def test_job_i_does_not_depend_on_n() -> None:
    few, many = generate_family_ak(9, 3), generate_family_ak(9, 8)
    assert all(_same(a, b) for a, b in zip(few, many[:3], strict=True))


@pytest.mark.parametrize(("kwargs", "argument"), [({"n": -1}, "n"), ({"step": 0.0}, "step"), ({"step": -30.0}, "step")])
def test_bad_arguments_raise_naming_the_argument(kwargs: dict[str, float], argument: str) -> None:
    args: dict[str, float] = {"n": 2, **kwargs}
    with pytest.raises(ValueError, match=argument):
        generate_family_ak(1, int(args["n"]), step=args.get("step", 30.0))
    assert generate_family_ak(1, 0) == []


def test_each_class_holds_about_a_fifth(jobs: list[FamilyAKJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert all(14 <= counts[c] <= 26 for c in CLASSES), counts


def test_labels_and_mechanisms_are_the_contracts(jobs: list[FamilyAKJob]) -> None:
    for j in jobs:
        assert j.label in CLASSES and j.label is not Bottleneck.UNKNOWN
        assert j.mechanism in MECHANISMS[j.label]
        assert all(isinstance(t, str) and t for t in j.tags)
        assert j.window.namespace == j.namespace and j.window.job == j.name
    assert len({(j.namespace, j.name) for j in jobs}) == len(jobs)
    # more than one mechanism per class is exercised
    assert all(len({j.mechanism for j in jobs if j.label is c}) >= 2 for c in CLASSES)


def test_windows_use_contract_names_and_consistent_shapes(jobs: list[FamilyAKJob]) -> None:
    for j in jobs:
        w = j.window
        assert np.allclose(np.diff(w.timestamps), w.step)
        assert w.start == w.timestamps[0] and w.end == w.timestamps[-1]
        assert len(w.pods) == int(next(t for t in j.tags if t.startswith("pods:")).split(":")[1])
        for pw in w.pods:
            assert set(pw.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape and v.dtype == np.float64 for v in pw.signals.values())
            assert pw.gpu_count >= 1 and pw.gpu_model
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0


def test_counter_signals_are_rates_of_counters(jobs: list[FamilyAKJob]) -> None:
    for j in jobs:
        for pw in j.window.pods:
            for name, v in pw.signals.items():
                finite = v[np.isfinite(v)]
                if SIGNALS[name].kind is Kind.COUNTER or SIGNALS[name].unit == "ratio":
                    assert (finite >= 0.0).all(), (j.name, name)
                if name.endswith("_frac") or name in ("gpu_util", "gr_engine_active", "sm_active", "tensor_active"):
                    assert (finite <= 1.0 + 1e-6).all(), (j.name, name)


def test_raw_counters_are_monotone_outside_drawn_resets(made: list[Made]) -> None:
    resets_seen = 0
    for m in made:
        for r in m.rendered:
            for name, s in r.series.items():
                if s.kind == "gauge":
                    continue
                for values in (s.values,) if s.denominator is None else (s.values, s.denominator):
                    assert np.isfinite(values).all(), name
                    for p in range(values.shape[0]):
                        drops = np.flatnonzero(np.diff(values[p]) < -1e-9)
                        for k in drops:  # each drop has a restart between the two scrapes
                            assert any(r.times[k] <= at <= r.times[k + 1] + 1.0 for at in s.resets), (name, k)
                        resets_seen += len(drops)
    assert resets_seen > 0  # the drawn restarts do show as counter resets


def test_dev_only_jobs_carry_no_profiling_fields(jobs: list[FamilyAKJob]) -> None:
    dev = [j for j in jobs if "dcgm:dev" in j.tags]
    full = [j for j in jobs if "dcgm:full" in j.tags]
    assert dev and full
    for j in dev:
        assert not (j.window.quality.families & PROF_FAMILIES)
        assert "no PROF fields" in j.window.quality.notes
        assert all("gpu_util" in pw.signals and "sm_active" not in pw.signals for pw in j.window.pods)
    assert all(Family.DCGM_PROF_SM in j.window.quality.families for j in full)


def test_missing_families_follow_the_drawn_stack(jobs: list[FamilyAKJob]) -> None:
    for j in jobs:
        fams = j.window.quality.families
        assert ("no-sidecar" in j.tags) == (Family.SIDECAR not in fams)
        assert Family.NODE_IB not in fams or "fabric:infiniband" in j.tags or "fabric:roce" in j.tags
        assert ("cpu-limit" in j.tags) or Family.CADVISOR_CFS not in fams


def test_too_short_jobs_exist_and_are_tagged(jobs: list[FamilyAKJob]) -> None:
    short = [j for j in jobs if "too-short" in j.tags]
    assert short
    assert all(j.window.timestamps.size < 8 for j in short)
    assert all(j.window.timestamps.size >= MIN_STEPS for j in jobs if "too-short" not in j.tags)


def test_generation_is_pure_and_fast_enough_in_count() -> None:
    # 600 Jobs must generate in well under a minute; here only that the work per Job stays bounded
    made = make_job(3, 0, 1_700_000_000.0, 30.0)
    assert made.trace.amounts["dur"].shape[1] < 20_000
    assert made.job.window.timestamps.size <= 3600 // 30 + 1


# --- the counterfactual labelling on hand-built Jobs ------------------------------------------------


def _healthy() -> JobSpec:
    """One A100 training a CNN with ample storage, workers and links: the GPU's math bounds it."""
    board = BOARD_BY_KEY["a100"]
    flops = 0.1 * board.tflops * 1e12 * 0.95 * 0.7  # 0.1 s of matmuls
    loader = Loader(
        batch=256,
        sample_bytes=100e3,
        decode_s=2e-3,
        workers=8,
        prefetch=2,
        storage=Storage.NVME,
        storage_gbs=5.0,
        latency_s=1e-4,
        per_request=1.0,
        concurrency=4.0,
        cache_hit=0.0,
        client_cpu_per_gb=0.05,
        collate_s=0.005,
        h2d_bytes=150e3,
        pinned=True,
        jitter=0.1,
    )
    model = Model(
        matmul_flops=flops,
        matmul_ai=600.0,
        elem_bytes=0.2 * 0.1 * board.hbm_gbs * 1e9 * 0.8,
        elem_ai=1.0,
        amp=True,
        kernels=500,
        launch_s=1e-5,
        sm_fill=0.95,
        occupancy=0.4,
        grad_bytes=1e8,
        overlap=0.8,
        backward_share=0.65,
        fb_frac=0.95,
    )
    host = Host(
        node_cpus=64,
        cpu_limit=None,
        neighbour_cpus=0.0,
        mem_limit=None,
        node_mem=512e9,
        anon_base=10e9,
        worker_rss=0.5e9,
        growth_bps=0.0,
        swap=False,
        touch_s=0.05,
        neighbours=0,
    )
    return JobSpec("cnn", board, 1, 1, Fabric.NONE, 0.0, 1.0, (1.0,), loader, model, host)


def _with(spec: JobSpec, **parts: object) -> JobSpec:
    fields = {k: v for k, v in parts.items() if k not in ("loader", "model", "host")}
    return replace(
        spec,
        loader=replace(spec.loader, **parts.get("loader", {})),  # type: ignore[arg-type]
        model=replace(spec.model, **parts.get("model", {})),  # type: ignore[arg-type]
        host=replace(spec.host, **parts.get("host", {})),  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


HEALTHY = _healthy()
HAND_BUILT = {
    "gpu-compute": (HEALTHY, Bottleneck.GPU, Mechanism.COMPUTE),
    "io-nfs": (
        _with(HEALTHY, loader={"storage": Storage.NFS, "storage_gbs": 0.1, "latency_s": 1e-3}),
        Bottleneck.IO,
        Mechanism.NETWORK_STORAGE,
    ),
    "cpu-quota": (_with(HEALTHY, host={"cpu_limit": 2.0}), Bottleneck.CPU, Mechanism.THROTTLED),
    "cpu-one-worker": (_with(HEALTHY, loader={"workers": 1}), Bottleneck.CPU, Mechanism.TOO_FEW_WORKERS),
    "interconnect-ethernet": (
        _with(
            HEALTHY,
            pods=4,
            fabric=Fabric.ETHERNET,
            fabric_gbps=10.0,
            clock_spread=(1.0,) * 4,
            model={"grad_bytes": 1e9, "overlap": 0.2},
        ),
        Bottleneck.INTERCONNECT,
        Mechanism.NETWORK,
    ),
    "memory-hbm": (
        _with(HEALTHY, model={"elem_bytes": 3.0 * 0.1 * HEALTHY.board.hbm_gbs * 1e9 * 0.8}),
        Bottleneck.MEMORY,
        Mechanism.HBM_BANDWIDTH,
    ),
    "memory-swap": (
        _with(HEALTHY, host={"mem_limit": 14e9 / 1.2, "swap": True}),
        Bottleneck.MEMORY,
        Mechanism.HOST_MEMORY_PRESSURE,
    ),
}


@pytest.mark.parametrize("case", list(HAND_BUILT))
def test_counterfactual_label_of_a_hand_built_job(case: str) -> None:
    spec, label, mechanism = HAND_BUILT[case]
    noise = draw_noise(np.random.default_rng(0), spec.pods, steps_for(spec), spec.loader.jitter)
    got = label_job(spec, noise)
    assert (got.label, got.mechanism) == (label, mechanism), got.speedups
    assert max(got.speedups.values()) > 1.2
    # the healthy Job's loader and links have slack: making them ample changes nothing
    if case == "gpu-compute":
        assert all(math.isclose(got.speedups[k], 1.0, abs_tol=0.03) for k in ("io", "cpu", "h2d", "launch"))
