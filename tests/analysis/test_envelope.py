"""The training envelope: familiar rows stay inside, rows from elsewhere are named and abstained on, files keep it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from bottleneck_operator.analysis.classify import analyze_window, analyze_windows
from bottleneck_operator.analysis.features.extract import FEATURE_NAMES
from bottleneck_operator.analysis.model.classifier import BottleneckModel, load_model, save_model
from bottleneck_operator.analysis.model.envelope import MIN_SIGNALS, fit_envelope, signal_of
from bottleneck_operator.contract.verdict import Abstention, Bottleneck
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.commands.train import simulated_windows


def _training(rows: int = 5000, width: int = 6, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(10.0, 2.0, size=(rows, width))
    x[:, 3] = 0.0  # a flag that training never saw set
    x[rng.random(x.shape) < 0.1] = np.nan
    return x


def test_rows_like_the_training_data_are_inside() -> None:
    envelope = fit_envelope(_training())
    fresh = _training(seed=1)
    outside = envelope.outside(fresh).sum(axis=1)
    assert (outside >= 2).mean() < 0.001  # two features out at once: essentially never in distribution


def test_far_values_and_unseen_flags_are_outside_and_named_furthest_first() -> None:
    envelope = fit_envelope(_training())
    row = np.array([10.0, 60.0, 10.0, 1.0, 10.0, 35.0])
    assert envelope.outside(row[None, :])[0].tolist() == [False, True, False, True, False, True]
    words = envelope.describe(row, ["a", "b", "c", "flag", "e", "f"], limit=2)
    assert len(words) == 2 and words[0].startswith("flag = 1") and words[1].startswith("b = 60")


def test_missing_values_and_never_present_features_never_count() -> None:
    x = _training()
    x[:, 5] = np.nan
    envelope = fit_envelope(x)
    row = np.array([np.nan, 10.0, 10.0, 0.0, 10.0, 1e9])
    assert not envelope.outside(row[None, :]).any()


def test_model_file_keeps_the_envelope(tiny_model: BottleneckModel, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    envelope = fit_envelope(rng.normal(size=(500, len(FEATURE_NAMES))))
    model = BottleneckModel(
        tiny_model.estimator,
        temperature=tiny_model.temperature,
        version="with-envelope",
        envelope=envelope,
    )
    path, _ = save_model(model, tmp_path)
    loaded = load_model(path)
    assert loaded.envelope is not None
    np.testing.assert_array_equal(loaded.envelope.low, envelope.low)
    np.testing.assert_array_equal(loaded.envelope.high, envelope.high)
    assert tiny_model.envelope is not None  # fitting keeps the training envelope
    bare = BottleneckModel(tiny_model.estimator, temperature=tiny_model.temperature, version="bare")
    save_model(bare, tmp_path)  # a model without one loads without one
    assert load_model(path).envelope is None


def test_several_signals_must_be_outside_and_spread_statistics_never_count() -> None:
    names = ["a.mean", "a.p90", "b.mean", "c.mean", "c.cv", "d.cv"]
    envelope = fit_envelope(_training())
    one_signal = np.array([60.0, 60.0, 10.0, 10.0, 10.0, 10.0])  # one signal far out, in two features
    assert envelope.unfamiliar(one_signal, names) == []
    spreads = np.array([10.0, 10.0, 60.0, 10.0, 1e6, 1e6])  # a near-zero signal's cv blows up: not counted
    assert envelope.unfamiliar(spreads, names) == []
    # a third signal out (a flag training never saw set) makes it unfamiliar, named once per signal
    words = envelope.unfamiliar(np.array([60.0, 60.0, 60.0, 1.0, 10.0, 10.0]), names)
    assert sorted(signal_of(w.split(" = ")[0]) for w in words) == ["a", "b", "c"]
    assert envelope.unfamiliar(np.array([60.0, 60.0, 60.0, 1.0, 10.0, 10.0]), names, min_signals=4) == []


def _far(window: JobWindow, factor: float) -> JobWindow:
    pods = tuple(dataclasses.replace(p, signals={k: v * factor for k, v in p.signals.items()}) for p in window.pods)
    return dataclasses.replace(window, pods=pods)


def test_a_window_far_outside_the_training_data_is_unknown_saying_which_features() -> None:
    model = load_model()
    _, windows = simulated_windows(4242, 4, holdout=True)
    for w in windows:
        assert analyze_window(w, model).abstention is not Abstention.OUT_OF_DISTRIBUTION
        v = analyze_window(_far(w, 100.0), model)  # every signal 100x what it was
        assert v.bottleneck is Bottleneck.UNKNOWN and v.abstention is Abstention.OUT_OF_DISTRIBUTION
        assert v.reason is not None and v.reason.startswith("outside what the model knows: ")
        assert len(v.reason.split("; ")) == MIN_SIGNALS and "familiar range" in v.reason
        assert not v.evidence and not v.recommendations and v.headroom is None


def test_held_out_simulated_jobs_are_familiar() -> None:
    model = load_model()
    assert model.envelope is not None
    _, windows = simulated_windows(5151, 60, holdout=True)
    flagged = [
        v for v in analyze_windows(windows, model, with_details=False) if v.abstention is Abstention.OUT_OF_DISTRIBUTION
    ]
    assert len(flagged) <= 1, [v.reason for v in flagged]
