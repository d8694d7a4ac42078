"""The facade: abstention reasons, vetoes, secondary class, gpu_active, per-pod breakdown, headroom."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.classify import analyze_window, analyze_windows
from bottleneck_operator.analysis.model.classifier import BottleneckModel
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Abstention, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow

from .conftest import FixedModel
from .synth import CPU_STARVED, GB, make_window

B = Bottleneck


def test_confident_verdict_has_no_reason() -> None:
    both = make_window(B.IO, overrides=CPU_STARVED)
    v = analyze_window(both, FixedModel({B.IO: 0.8, B.CPU: 0.2}))
    assert v.bottleneck is B.IO and v.reason is None and v.secondary is None and v.abstention is None
    assert abs(v.confidence - 0.8) < 1e-9
    assert set(v.probabilities) == {c.value for c in CLASSES}


def test_the_classifier_decides_where_nothing_rules_its_class_out() -> None:
    # an IO-looking window, a model sure of CPU: nothing measured rules CPU out (a process holds a full
    # core), so the model's class stands: no rule moves probability from one class to another
    window = make_window(B.IO, noise=0.0, overrides={"sc_procs_busy": 2.0})
    v = analyze_window(window, FixedModel({B.CPU: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.CPU and v.confidence == pytest.approx(0.9)


BUSY = {"gpu_util": 0.995, "gr_engine_active": 0.99, "pcie_rx_bps": 5 * GB}


def test_a_vetoed_favourite_leaves_the_rest_renormalised_with_a_note() -> None:
    # kernels run 99 % of the time by both readings: no input stage can cost 5 % (XProf's bar), so the
    # model's IO is ruled out and GPU keeps the rest
    v = analyze_window(make_window(B.GPU, overrides=BUSY, noise=0.0), FixedModel({B.IO: 0.6, B.GPU: 0.4}))
    assert v.bottleneck is B.GPU and v.confidence == pytest.approx(1.0)
    assert v.probabilities["IO"] == 0.0
    assert any(n.startswith("IO ruled out (60 % from the model)") for n in v.notes)


def test_every_class_ruled_out_abstains_leaning_to_the_models_favourite() -> None:
    window = make_window(B.GPU, overrides=BUSY, noise=0.0)
    (bare,) = analyze_windows([window], FixedModel({B.IO: 1.0}), with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.IO
    assert bare.abstention is Abstention.LOW_CONFIDENCE
    assert bare.reason and "rule out every class" in bare.reason and "IO" in bare.reason


def test_busy_gpus_rule_out_the_input_stages_but_not_the_links() -> None:
    model = FixedModel({B.IO: 0.5, B.CPU: 0.2, B.INTERCONNECT: 0.3})
    v = analyze_window(make_window(B.GPU, overrides=BUSY, noise=0.0), model)
    assert v.probabilities["IO"] == 0.0 and v.probabilities["CPU"] == 0.0
    assert v.bottleneck is B.INTERCONNECT


def test_quiet_links_do_not_rule_out_interconnect() -> None:
    """Bytes against capacity bound a transfer's bandwidth term, not its latency term: a collective of
    many small messages waits on the links while they carry few bytes, so quiet links veto nothing."""
    # one A100 (no peers), PCIe at 1.5 of 31.5 GB/s: 4.8 % of the link
    quiet = {"pcie_rx_bps": 1.5 * GB, "pcie_tx_bps": 0.1 * GB}
    v = analyze_window(make_window(B.GPU, overrides=quiet, noise=0.0), FixedModel({B.INTERCONNECT: 0.7, B.GPU: 0.3}))
    assert v.bottleneck is B.INTERCONNECT and v.probabilities["Interconnect"] == 0.7
    assert not any(n.startswith("Interconnect ruled out") for n in v.notes)


def test_memory_is_ruled_out_only_when_both_mechanisms_are() -> None:
    model = FixedModel({B.MEMORY: 0.7, B.GPU: 0.3})
    # DRAM at 0.3 and no memory pressure in the pod: neither HBM nor host memory binds
    assert analyze_window(make_window(B.GPU, noise=0.0), model).bottleneck is B.GPU
    # the same with swap-ins in the pod: host memory stays open
    swapping = {"sc_swapin_ps": 500.0}
    assert analyze_window(make_window(B.GPU, overrides=swapping, noise=0.0), model).bottleneck is B.MEMORY
    # without DRAM activity, GPU compute and HBM bandwidth cannot be told apart: Memory stays open
    no_dram = make_window(B.GPU, noise=0.0, drop=[Family.DCGM_PROF])
    assert analyze_window(no_dram, model).bottleneck is B.MEMORY


def test_headroom_comes_from_a_measured_wait_else_the_bare_ceiling() -> None:
    # IO: the pod's io.pressure at 60 % against GPUs idle up to 70 %: x2.5 at most, from no gain up
    v = analyze_window(make_window(B.IO, noise=0.0), FixedModel({B.IO: 1.0}))
    assert v.headroom is not None and v.headroom.low == 1.0
    assert v.headroom.high == pytest.approx(1 / (1 - 0.6))
    assert "io.pressure" in v.headroom.basis
    # without the collector nothing measured the wait: the bare ceiling, said as such, by the lower busy
    # reading (GR_ENGINE_ACTIVE 0.30 against GPU_UTIL 0.35): "at most" must allow for every reading
    bare = analyze_window(make_window(B.IO, noise=0.0, drop=[Family.SIDECAR]), FixedModel({B.IO: 1.0}))
    assert bare.headroom is not None and bare.headroom.basis.startswith("bare ceiling")
    assert bare.headroom.high == pytest.approx(1 / 0.30)


def test_abstains_below_threshold_with_reason() -> None:
    model = FixedModel({B.IO: 0.45, B.CPU: 0.35, B.MEMORY: 0.2})
    both = make_window(B.IO, overrides={**CPU_STARVED, "dram_active": 0.82})
    v = analyze_window(both, model, abstain_threshold=0.5)
    assert v.bottleneck is B.UNKNOWN
    assert v.reason and "abstain_threshold" in v.reason
    assert v.abstention is Abstention.LOW_CONFIDENCE and not v.abstention.is_data_problem
    assert analyze_window(both, model, abstain_threshold=0.4).bottleneck is B.IO


def test_abstains_on_low_coverage_and_short_window() -> None:
    model = FixedModel({B.GPU: 0.99})
    thin = make_window(B.GPU, coverage=0.3)
    v = analyze_window(thin, model, min_coverage=0.5)
    assert v.bottleneck is B.UNKNOWN and v.reason and "coverage" in v.reason
    assert v.abstention is Abstention.LOW_COVERAGE and v.abstention.is_data_problem
    short = make_window(B.GPU, samples=3, step=30.0)
    v = analyze_window(short, model, min_window=120.0)
    assert v.bottleneck is B.UNKNOWN and v.reason and "min_window" in v.reason
    assert v.abstention is Abstention.SHORT_WINDOW
    # long enough in seconds, yet three scrapes: still too short to judge
    few = analyze_window(short, model, min_window=60.0)
    assert few.abstention is Abstention.SHORT_WINDOW and few.reason and "too few samples" in few.reason
    assert analyze_window(make_window(B.GPU, samples=20, step=15.0), model, min_window=60.0).bottleneck is B.GPU


def _held(w: JobWindow, k: int, interval: float) -> JobWindow:
    """The window as a scrape every ``interval`` seconds reads on its grid: each reading held ``k`` points."""
    n = len(w.timestamps)
    pods = tuple(
        replace(p, signals={name: np.repeat(np.asarray(v)[::k], k)[:n] for name, v in p.signals.items()})
        for p in w.pods
    )
    return replace(w, pods=pods, quality=replace(w.quality, scrape_interval=interval))


def test_samples_seen_count_scrapes_not_grid_points() -> None:
    from bottleneck_operator.analysis.checks.data import samples_seen

    w = make_window(B.GPU, samples=30, step=30.0)
    assert samples_seen(w) == pytest.approx(30.0)
    assert samples_seen(_held(w, 2, 60.0)) == pytest.approx(15.0)
    # the same 900 s at a 120 s scrape is 7.5 readings: the window abstains and says what it needs
    v = analyze_window(_held(w, 4, 120.0), FixedModel({B.GPU: 0.99}))
    assert v.abstention is Abstention.SHORT_WINDOW
    assert v.reason and "8 scrapes at 120 s" in v.reason and "at least 1440 s" in v.reason


def test_a_thrown_off_interval_estimate_does_not_hide_the_readings() -> None:
    """An exporter that restarted leaves a pod two short series and a gap: the interval estimate
    reads one scrape a minute, yet the grid holds a new reading at every point."""
    from bottleneck_operator.analysis.checks.data import samples_seen

    w = make_window(B.GPU, samples=30, step=30.0)
    thrown = replace(w, quality=replace(w.quality, scrape_interval=300.0))
    assert samples_seen(thrown) == pytest.approx(30.0)
    assert analyze_window(thrown, FixedModel({B.GPU: 0.99})).bottleneck is B.GPU


def test_no_pods_is_unknown() -> None:
    empty = JobWindow("ml", "gone", 0.0, 900.0, 30.0, np.empty(0), (), DataQuality())
    v = analyze_window(empty, FixedModel({B.GPU: 0.99}))
    assert v.bottleneck is B.UNKNOWN and v.reason and "no pods" in v.reason
    assert v.abstention is Abstention.NO_PODS
    assert v.confidence == 0.0


def test_secondary_within_margin() -> None:
    both = make_window(B.IO, overrides=CPU_STARVED)
    v = analyze_window(both, FixedModel({B.CPU: 0.55, B.IO: 0.45}), secondary_margin=0.25)
    assert v.bottleneck is B.CPU and v.secondary is B.IO
    v = analyze_window(both, FixedModel({B.CPU: 0.8, B.IO: 0.2}), secondary_margin=0.25)
    assert v.secondary is None


def test_gpu_active_uses_best_signal() -> None:
    model = FixedModel({B.CPU: 0.9})
    full = analyze_window(make_window(B.CPU, noise=0.0), model)
    assert full.gpu_active is not None and abs(full.gpu_active - 0.33) < 1e-6  # sm_active
    no_sm = analyze_window(make_window(B.CPU, noise=0.0, drop=[Family.DCGM_PROF_SM]), model)
    assert no_sm.gpu_active is not None and abs(no_sm.gpu_active - 0.35) < 1e-6  # gr_engine_active
    dev = analyze_window(make_window(B.CPU, noise=0.0, drop=[Family.DCGM_PROF_SM, Family.DCGM_PROF]), model)
    assert dev.gpu_active is not None and abs(dev.gpu_active - 0.4) < 1e-6  # gpu_util


def test_pod_breakdown_for_multi_pod_jobs(tiny_model) -> None:  # type: ignore[no-untyped-def]
    w = make_window(B.GPU, pods=3, noise=0.02)
    io = make_window(B.IO, noise=0.02)
    w = replace(w, pods=(w.pods[0], w.pods[1], replace(io.pods[0], pod="job-gpu-2")))
    # Without the training envelope: a Job mixing GPU- and IO-bound pods lies outside the tiny
    # model's two dozen windows per class, and the breakdown, not the abstention, is under test here.
    model = BottleneckModel(tiny_model.estimator, temperature=tiny_model.temperature, version="no-envelope")
    v = analyze_window(w, model)
    assert v.abstention is None, v.reason
    assert [p.pod for p in v.pods] == ["job-gpu-0", "job-gpu-1", "job-gpu-2"]
    assert v.pods[0].bottleneck is B.GPU
    assert v.pods[2].bottleneck is B.IO
    assert v.pods[2].gpu_active is not None and v.pods[2].gpu_active < 0.5


def test_tiny_model_recognises_textbook_windows(tiny_model) -> None:  # type: ignore[no-untyped-def]
    windows = [make_window(c, seed=100 + i, noise=0.1) for i, c in enumerate(CLASSES)]
    verdicts = analyze_windows(windows, tiny_model, abstain_threshold=0.0)
    assert [v.bottleneck for v in verdicts] == list(CLASSES)
    assert all(v.model_version == "test-tiny" for v in verdicts)


def test_a_memory_verdict_on_gpus_that_never_waited_is_the_gpus_own_memory() -> None:
    # DEV fields only: no DRAM_ACTIVE, GPU_UTIL 0.98. Host memory is ruled out with every input stage
    # (the GPUs never waited), so the Memory left standing is HBM's, and the report says that compute-
    # and bandwidth-bound kernels cannot be told apart without DRAM_ACTIVE.
    w = make_window(B.MEMORY, noise=0.0, drop=[Family.DCGM_PROF], overrides={"sc_psi_mem_some": 0.3})
    v = analyze_window(w, FixedModel({B.MEMORY: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.MEMORY and v.mechanism is Mechanism.HBM_BANDWIDTH
    assert any("DRAM_ACTIVE was not collected" in n for n in v.notes)
    assert v.headroom is not None and v.headroom.basis.startswith("HBM-bandwidth-bound kernels")
    # the same job with GPUs that idle: host memory pressure stays the reading
    idle = make_window(
        B.MEMORY, noise=0.0, drop=[Family.DCGM_PROF], overrides={"sc_psi_mem_some": 0.3, "gpu_util": 0.5}
    )
    v = analyze_window(idle, FixedModel({B.MEMORY: 0.9, B.IO: 0.1}))
    assert v.mechanism is Mechanism.HOST_MEMORY_PRESSURE
    assert not any("DRAM_ACTIVE was not collected" in n for n in v.notes)


def test_a_compute_verdict_without_dram_activity_says_hbm_bound_kernels_look_the_same() -> None:
    # DEV fields only: GPU_UTIL cannot tell compute-bound kernels from HBM-bound ones, whichever is named
    model = FixedModel({B.GPU: 0.9, B.MEMORY: 0.1})
    dev_only = analyze_window(make_window(B.GPU, noise=0.0, drop=[Family.DCGM_PROF]), model)
    assert dev_only.bottleneck is B.GPU and dev_only.mechanism is Mechanism.COMPUTE
    assert any("DRAM_ACTIVE was not collected" in n for n in dev_only.notes)
    # with DRAM_ACTIVE read there is nothing to say
    profiled = analyze_window(make_window(B.GPU, noise=0.0), model)
    assert profiled.bottleneck is B.GPU and not any("DRAM_ACTIVE was not collected" in n for n in profiled.notes)
