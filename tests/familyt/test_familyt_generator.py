"""Family T: the interface, the window's contract, and the label from the composition."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import DEFAULT_SCRAPE_INTERVAL
from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyt import FamilyTJob, generate_family_t
from bottleneck_operator_dev.familyt.generate import generate_job
from bottleneck_operator_dev.familyt.hardware import GPUS
from bottleneck_operator_dev.familyt.perf import (
    STAGE_CLASS,
    STAGES,
    KernelGroup,
    Overlap,
    StageTimes,
    allreduce,
    binding_stage,
    compose,
    reductions,
    roofline,
)

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyTJob]:
    return generate_family_t(seed=3, n=60, start=START)


def test_deterministic_and_independent_of_n() -> None:
    a = generate_family_t(seed=5, n=6, start=START)
    b = generate_family_t(seed=5, n=6, start=START)
    for x, y in zip(a, b, strict=True):
        assert (x.name, x.label, x.mechanism, x.tags) == (y.name, y.label, y.mechanism, y.tags)
        for p, q in zip(x.window.pods, y.window.pods, strict=True):
            for name in p.signals:
                np.testing.assert_array_equal(p.signals[name], q.signals[name])
    # job i depends on (seed, i, its class) alone, not on n
    one = generate_job(5, 4, a[4].label, start=START, step=30.0)
    assert one.tags == a[4].tags
    np.testing.assert_array_equal(one.window.pods[0].signals["gpu_util"], a[4].window.pods[0].signals["gpu_util"])


def test_interface_errors() -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_t(seed=1, n=-1, start=START)
    with pytest.raises(ValueError, match="step must be"):
        generate_family_t(seed=1, n=3, start=START, step=0.0)
    assert generate_family_t(seed=1, n=0, start=START) == []


def test_class_balance_and_shuffle(jobs: list[FamilyTJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) == 0
    seven = Counter(j.label for j in generate_family_t(seed=3, n=7, start=START))
    assert max(seven.values()) - min(seven.values()) <= 1
    labels = [j.label for j in jobs]
    assert labels != [CLASSES[i % 5] for i in range(60)]  # shuffled, not cycled


def test_mechanisms_belong_to_their_class_and_both_memory_ones_occur() -> None:
    jobs = generate_family_t(seed=1, n=60, start=START)
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}


def test_grid_shapes_and_quality(jobs: list[FamilyTJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.start == START and w.step == 30.0
        np.testing.assert_allclose(np.diff(w.timestamps), 30.0)
        assert w.end == w.timestamps[-1]
        for p in w.pods:
            for v in p.signals.values():
                assert v.shape == w.timestamps.shape and v.dtype == np.float64
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval is not None and 10 <= w.quality.scrape_interval <= 60
        assert coverage > 0.8
    assert DEFAULT_SCRAPE_INTERVAL == 30.0


def test_contract_names_and_units(jobs: list[FamilyTJob]) -> None:
    for j in jobs:
        for p in j.window.pods:
            gpu = next(g for g in GPUS if g.model == p.gpu_model)
            for name, v in p.signals.items():
                assert name in SIGNALS
                finite = v[np.isfinite(v)]
                if SIGNALS[name].unit == "ratio":
                    assert ((finite >= 0) & (finite <= 1)).all(), name
                elif name != "xid_code":
                    assert (finite >= -1e-6).all(), name
            limit = p.signals.get("power_limit_w")
            enforced = float(np.nanmax(limit)) if limit is not None else gpu.tdp_w
            assert np.nanmax(p.signals["power_w"]) <= min(enforced, gpu.tdp_w) + 1e-6
            assert np.nanmax(p.signals["sm_clock_mhz"]) <= gpu.max_clock_mhz + 1e-6


def test_counter_signals_non_negative_across_resets() -> None:
    # rate() of a counter that restarts from zero is never negative: the resets are counter resets
    jobs = generate_family_t(seed=11, n=40, start=START)
    assert any("counter-reset" in j.tags for j in jobs)
    for j in jobs:
        for p in j.window.pods:
            for name in ("cpu_cores", "node_net_rx_bps", "node_cpu_busy_frac"):
                v = p.signals[name]
                assert (v[np.isfinite(v)] >= 0).all()


def _ov(**kw: object) -> Overlap:
    base = Overlap(workers=4, pipelined=True, cv2=0.5, h2d_overlap=0.5, comm_overlap=0.5, buckets=4, mem_on_workers=0.5)
    return replace(base, **kw)  # type: ignore[arg-type]


ZERO = StageTimes(0, 0, 0, 0, 0, 0, 0, 0, 0)


def test_removing_the_binding_stage_shortens_the_step_most() -> None:
    st = replace(ZERO, storage=0.30, decode=0.10, compute=0.12, hbm=0.03, backward=0.1)
    stage, runner = binding_stage(st, _ov())
    red = reductions(st, _ov())
    assert stage == "storage" and red["storage"] == max(red.values())
    assert 0 <= runner < 1
    st2 = replace(st, compute=0.5, backward=0.33)
    assert STAGE_CLASS[binding_stage(st2, _ov())[0]] is Bottleneck.GPU
    for s in STAGES:
        assert compose(st2.without(s), _ov()).step <= compose(st2, _ov()).step + 1e-12


def test_collective_hides_behind_backward_until_compute_is_removed() -> None:
    st = replace(ZERO, compute=0.3, backward=0.2, collective=0.1)
    ov = _ov(comm_overlap=1.0, buckets=10)
    assert compose(st, ov).comm_exposed == pytest.approx(0.01)  # only the last bucket shows
    assert compose(st.without("compute"), ov).step == pytest.approx(0.1)  # nothing left to hide behind
    assert binding_stage(st, ov)[0] == "compute"


def test_queue_waits_near_balance_and_no_workers_serialises() -> None:
    base = replace(ZERO, decode=0.09, compute=0.1, backward=0.07)
    near = compose(base, _ov()).wait
    far = compose(replace(base, decode=0.02), _ov()).wait
    assert near > far > 0
    serial = compose(base, _ov(workers=0))
    assert serial.step == pytest.approx(0.19)


def test_roofline_regimes() -> None:
    a100 = next(g for g in GPUS if g.model.startswith("NVIDIA A100"))
    ridge = a100.peak["bf16"] / a100.hbm_bps  # ~153 FLOP/B
    kw = {"peak_tensor": a100.peak["bf16"], "peak_vector": a100.peak["fp32"], "hbm_bps": a100.hbm_bps}
    gemm = roofline((KernelGroup(1e13, 1e13 / (4 * ridge), 100, True),), compute_eff=1, bw_eff=1, launch_s=5e-6, **kw)
    assert gemm.hbm == 0 and gemm.compute == pytest.approx(1e13 / a100.peak["bf16"])
    ew = roofline((KernelGroup(1e10, 1e10, 100, False),), compute_eff=1, bw_eff=1, launch_s=5e-6, **kw)
    assert ew.compute == 0 and ew.hbm == pytest.approx(1e10 / a100.hbm_bps)
    tiny = roofline((KernelGroup(1e6, 1e6, 1000, False),), compute_eff=1, bw_eff=1, launch_s=10e-6, **kw)
    assert tiny.launch > 100 * tiny.hbm  # tiny kernels: the GPU waits on launches


def test_ring_allreduce_bytes() -> None:
    c = allreduce(
        1e9, gpus_per_node=8, nodes=4, intra_bps=300e9, intra_alpha=0, inter_bps=50e9, inter_alpha=0, bucket_bytes=25e6
    )
    assert c.intra_bytes == pytest.approx(2 * 7 / 8 * 1e9)
    assert c.inter_bytes == pytest.approx(2 * 3 / 4 * 1e9)
    assert c.seconds == pytest.approx(c.intra_bytes / 300e9 + c.inter_bytes / 50e9)
    single = allreduce(
        1e9, gpus_per_node=1, nodes=1, intra_bps=1, intra_alpha=1, inter_bps=1, inter_alpha=1, bucket_bytes=1
    )
    assert single.seconds == 0


def _mean(j: FamilyTJob, name: str) -> float:
    vals = [np.nanmean(p.signals[name]) for p in j.window.pods if name in p.signals]
    return float(np.mean(vals)) if vals else float("nan")


def test_per_class_physics(jobs: list[FamilyTJob]) -> None:
    by: dict[str, list[FamilyTJob]] = {}
    for j in generate_family_t(seed=2, n=100, start=START):
        by.setdefault(j.mechanism, []).append(j)
    gpu_bound = np.median([_mean(j, "gpu_util") for j in by["compute"]])
    io_bound = np.median([_mean(j, "gpu_util") for j in by["network-storage"] + by["local-disk"]])
    assert gpu_bound > io_bound  # a GPU-bound job keeps its GPU busier than a storage-bound one
    host = [j for j in by["host-memory-pressure"] if "sc_psi_mem_some" in j.window.pods[0].signals]
    others = [j for j in by["compute"] if "sc_psi_mem_some" in j.window.pods[0].signals]
    if host and others:
        assert np.median([_mean(j, "sc_psi_mem_some") for j in host]) > np.median(
            [_mean(j, "sc_psi_mem_some") for j in others]
        )
    hbm = [j for j in by["hbm-bandwidth"] if "dram_active" in j.window.pods[0].signals]
    comp = [j for j in by["compute"] if "dram_active" in j.window.pods[0].signals]
    if hbm and comp:
        assert np.median([_mean(j, "dram_active") for j in hbm]) > np.median([_mean(j, "dram_active") for j in comp])
    network = by.get("network", [])
    assert network and all(j.window.pods and len(j.window.pods) > 1 for j in network)
