"""Training: degradation of windows, and a small model on simulated jobs that generalises to held-out ones."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.classify import analyze_windows
from bottleneck_operator.analysis.evaluation.metrics import figures
from bottleneck_operator.analysis.model.degrade import UNREAD, degrade, trailing_mean
from bottleneck_operator.analysis.model.training import build_training_set, fit_model
from bottleneck_operator.contract.signals import SIGNAL_NAMES, SIGNALS
from bottleneck_operator.contract.verdict import Bottleneck

from .synth import make_window


def test_degrade_drops_whole_families_and_keeps_the_input() -> None:
    w = make_window(Bottleneck.IO)
    rng = np.random.default_rng(0)
    seen_missing: set[str] = set()
    for _ in range(40):
        d = degrade(w, rng)
        present = set(d.pods[0].signals)
        missing = set(SIGNAL_NAMES) - present  # context signals (XID) are never in a window
        seen_missing |= {SIGNALS[n].family.value for n in missing}
        # a family is dropped whole or kept whole
        for n in missing:
            fam = SIGNALS[n].family
            assert not any(SIGNALS[p].family is fam for p in present)
        assert "gpu_util" in present  # DEV fields are the floor
        assert len(d.timestamps) == len(d.pods[0].signals["gpu_util"])
    assert {"sidecar", "node_psi", "dcgm_prof_sm"} <= seen_missing
    assert len(w.pods[0].signals) == len(SIGNAL_NAMES)


def test_trailing_mean_is_a_rate_window() -> None:
    v = np.array([0.0, 0.0, 4.0, 4.0, np.nan, 4.0])
    out = trailing_mean(v, 2, ramp=False)
    np.testing.assert_allclose(out, [0.0, 0.0, 2.0, 4.0, np.nan, 4.0])
    ramped = trailing_mean(np.array([4.0, 4.0, 4.0]), 2, ramp=True)
    np.testing.assert_allclose(ramped, [2.0, 4.0, 4.0])


def test_small_model_on_simulated_jobs_beats_chance_on_held_out_jobs() -> None:
    from bottleneck_operator_dev.simulation import generate_jobs

    start = 1_767_225_600.0
    train = [j for j in generate_jobs(11, 100, start=start) if not j.ambiguous]
    test = [j for j in generate_jobs(12, 40, start=start, holdout=True) if not j.ambiguous]
    data = build_training_set([j.to_window() for j in train], [j.label for j in train], copies=1, seed=11)
    model = fit_model(data, seed=11, version="test-sim", max_iter=40)
    verdicts = analyze_windows([j.to_window() for j in test], model, abstain_threshold=0.0, with_details=False)
    fig = figures([j.label.value for j in test], [v.bottleneck.value for v in verdicts])
    # chance is 0.2 for five balanced classes
    assert fig.accuracy > 0.6, fig.as_dict()
    assert fig.macro_f1 > 0.55


def test_degrade_does_not_depend_on_the_order_signals_were_stored_in() -> None:
    # Producers may fill a pod's signal dict in any order (set order changes between interpreter runs);
    # a seed must still give the same degraded window, or `train` would not reproduce its model.
    w = make_window(Bottleneck.IO, pods=2, seed=4)
    flipped = replace(w, pods=tuple(replace(p, signals=dict(reversed(list(p.signals.items())))) for p in w.pods))
    for seed in range(6):  # about half the draws lose samples at random, where order matters
        a = degrade(w, np.random.default_rng(seed))
        b = degrade(flipped, np.random.default_rng(seed))
        for pa, pb in zip(a.pods, b.pods, strict=True):
            assert sorted(pa.signals) == sorted(pb.signals)
            for name, values in pa.signals.items():
                np.testing.assert_array_equal(values, pb.signals[name])


def test_signals_no_feature_reads_leave_the_degraded_copies_as_they_were() -> None:
    # The worlds emit the pod's own network bytes, which no feature reads yet: a copy must not carry
    # them, nor draw differently because the window does, or `train` would not reproduce its model.
    w = make_window(Bottleneck.IO, noise=0.05, seed=7)
    without = replace(
        w,
        pods=tuple(replace(p, signals={k: v for k, v in p.signals.items() if k not in UNREAD}) for p in w.pods),
    )
    assert UNREAD and all(set(p.signals) >= UNREAD for p in w.pods)
    for seed in range(30):
        a = degrade(w, np.random.default_rng(seed))
        b = degrade(without, np.random.default_rng(seed))
        for pa, pb in zip(a.pods, b.pods, strict=True):
            assert not UNREAD & set(pa.signals)
            assert pa.signals.keys() == pb.signals.keys()
            for name in pa.signals:
                np.testing.assert_array_equal(pa.signals[name], pb.signals[name])


def test_context_features_never_move_a_verdict() -> None:
    """Node-wide CPU busy and pressure describe the node, not the job: the model does not read them."""
    from bottleneck_operator.analysis.features.extract import CONTEXT_ONLY, FEATURE_INDEX, extract_features

    classes = [c for c in Bottleneck if c is not Bottleneck.UNKNOWN]
    windows = [make_window(c, seed=s) for s in range(12) for c in classes]
    labels = [c for _ in range(12) for c in classes]
    model = fit_model(build_training_set(windows, labels, copies=1, seed=5), seed=5, version="test-ctx", max_iter=15)
    x = extract_features([make_window(c, seed=99) for c in classes])
    moved = x.copy()
    for name in CONTEXT_ONLY:
        moved[:, FEATURE_INDEX[name]] = 0.97
    np.testing.assert_allclose(model.predict_proba(moved), model.predict_proba(x))
    assert "node_cpu_busy_frac.mean" in CONTEXT_ONLY and "cpu_psi_own.mean" not in CONTEXT_ONLY
    # the pod's raw CPU pressure is read only through cpu_psi_own (discounted far from the cgroup's limit)
    assert "sc_psi_cpu_some_band.mean" in CONTEXT_ONLY


def test_the_temperature_is_fitted_across_worlds_when_there_are_several() -> None:
    """A world whose labels the other contradicts makes a model fitted on one confidently wrong on the
    other: fitted across worlds, the temperature flattens the probabilities far more than one fitted
    on held-out jobs of the same worlds, which hides that disagreement."""
    from bottleneck_operator_dev.simulation import generate_jobs

    start = 1_767_225_600.0
    jobs = [j for j in generate_jobs(21, 80, start=start) if not j.ambiguous]
    windows = [j.to_window() for j in jobs]
    classes = list(Bottleneck)
    classes.remove(Bottleneck.UNKNOWN)
    shifted = [classes[(classes.index(j.label) + 1) % len(classes)] for j in jobs]
    labels = [j.label for j in jobs] + shifted
    both = [*windows, *windows]
    worlds = [0] * len(jobs) + [1] * len(jobs)
    across = fit_model(
        build_training_set(both, labels, copies=0, seed=3, worlds=worlds), seed=3, version="t", max_iter=20
    )
    home = fit_model(build_training_set(both, labels, copies=0, seed=3), seed=3, version="t", max_iter=20)
    assert across.metadata["calibration"] == "across 2 worlds"
    assert home.metadata["calibration"] == "held-out jobs"
    assert across.temperature > 2 * home.temperature, (across.temperature, home.temperature)


def test_calibration_rows_move_the_temperature_not_the_trees() -> None:
    """Rows of a world the trees never saw, whose labels contradict the training ones, fit a flatter
    temperature; the trees, and so the class each window is read as, stay those fitted without them."""
    from bottleneck_operator_dev.simulation import generate_jobs

    start = 1_767_225_600.0
    jobs = [j for j in generate_jobs(21, 80, start=start) if not j.ambiguous]
    windows = [j.to_window() for j in jobs]
    classes = [c for c in Bottleneck if c is not Bottleneck.UNKNOWN]
    shifted = [classes[(classes.index(j.label) + 1) % len(classes)] for j in jobs]
    data = build_training_set(windows, [j.label for j in jobs], copies=0, seed=3)
    other = build_training_set(windows, shifted, copies=0, seed=3, worlds=[0] * len(jobs))
    plain = fit_model(data, seed=3, version="t", max_iter=20)
    calibrated = fit_model(data, seed=3, version="t", max_iter=20, calibration=other)
    assert plain.metadata["calibration"] == "held-out jobs"
    assert calibrated.metadata["calibration"] == (
        f"held-out jobs and 1 calibration world the trees never saw ({len(jobs)} rows)"
    )
    assert calibrated.temperature > 2 * plain.temperature, (calibrated.temperature, plain.temperature)
    np.testing.assert_array_equal(calibrated.raw_scores(data.x), plain.raw_scores(data.x))


def test_a_training_set_built_in_batches_is_the_one_built_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from bottleneck_operator.analysis.model import training

    classes = [Bottleneck.IO, Bottleneck.CPU, Bottleneck.GPU, Bottleneck.MEMORY, Bottleneck.INTERCONNECT] * 2
    windows = [make_window(c, pods=1 + i % 2) for i, c in enumerate(classes)]
    whole = build_training_set(windows, classes, copies=2, seed=5, worlds=[i % 2 for i in range(len(classes))])
    # batches of 4 windows split the copies of one job across two batches
    monkeypatch.setattr(training, "FEATURE_BATCH", 4)
    batched = build_training_set(windows, classes, copies=2, seed=5, worlds=[i % 2 for i in range(len(classes))])
    assert batched.x.shape == whole.x.shape == (30, whole.x.shape[1])
    np.testing.assert_array_equal(batched.x, whole.x)
    np.testing.assert_array_equal(batched.y, whole.y)
    np.testing.assert_array_equal(batched.groups, whole.groups)
    assert batched.worlds is not None and whole.worlds is not None
    np.testing.assert_array_equal(batched.worlds, whole.worlds)


def test_a_training_set_streamed_one_job_at_a_time_is_the_one_built_whole() -> None:
    from bottleneck_operator.analysis.model.training import stream_training_set

    classes = [Bottleneck.IO, Bottleneck.CPU, Bottleneck.GPU, Bottleneck.MEMORY, Bottleneck.INTERCONNECT] * 2
    windows = [make_window(c, seed=i) for i, c in enumerate(classes)]
    worlds = [i // 4 for i in range(len(classes))]
    whole = build_training_set(windows, classes, copies=2, seed=5, worlds=worlds)
    streamed = stream_training_set(iter(zip(windows, classes, worlds, strict=True)), copies=2, seed=5)
    assert streamed.digest() == whole.digest() and streamed.worlds is not None
    assert build_training_set(windows, classes, copies=2, seed=5).worlds is None


def test_a_training_set_digest_moves_with_any_row_and_not_otherwise() -> None:
    """The digest a retrained model's version carries: the same windows give the same digest, one
    signal moved in one window (as a changed simulator would) gives another."""
    windows = [make_window(c) for c in (Bottleneck.IO, Bottleneck.GPU)]
    labels = [Bottleneck.IO, Bottleneck.GPU]
    same = build_training_set(windows, labels, copies=1, seed=3).digest()
    assert same == build_training_set(windows, labels, copies=1, seed=3).digest()
    pod = windows[1].pods[0]
    moved_pod = replace(pod, signals={**pod.signals, "gpu_util": pod.signals["gpu_util"] * 0.9})
    moved = [windows[0], replace(windows[1], pods=(moved_pod, *windows[1].pods[1:]))]
    assert build_training_set(moved, labels, copies=1, seed=3).digest() != same
    assert build_training_set(windows, labels[::-1], copies=1, seed=3).digest() != same
