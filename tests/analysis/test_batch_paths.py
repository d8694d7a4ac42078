"""The batch paths of feature extraction give what the generic ones give, to the last bit: signal blocks
and plain dicts, short segments and reduceat, plane-by-plane statistics and the whole-array summary."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.features import extract, stats
from bottleneck_operator.analysis.features.derived import derived_columns, derived_series
from bottleneck_operator.analysis.features.extract import QUANTILES, extract_features
from bottleneck_operator.analysis.features.gather import gather
from bottleneck_operator.analysis.features.series_names import SERIES
from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.window import JobWindow, PodWindow, SignalBlock
from bottleneck_operator_dev.commands.train import simulated_windows


@pytest.fixture(scope="module")
def windows() -> list[JobWindow]:
    return simulated_windows(4242, 24, holdout=True)[1]


def _as_dicts(windows: list[JobWindow]) -> list[JobWindow]:
    """The same windows with every pod's signals in a plain dict of copies."""
    return [
        replace(w, pods=tuple(replace(p, signals={k: v.copy() for k, v in p.signals.items()}) for p in w.pods))
        for w in windows
    ]


def test_simulated_pods_carry_signal_blocks(windows: list[JobWindow]) -> None:
    assert all(isinstance(p.signals, SignalBlock) for w in windows for p in w.pods)


def test_blocks_and_dicts_give_the_same_features(windows: list[JobWindow]) -> None:
    np.testing.assert_array_equal(extract_features(windows), extract_features(_as_dicts(windows)))


def test_slices_give_the_same_matrix_as_one_pass(windows: list[JobWindow], monkeypatch: pytest.MonkeyPatch) -> None:
    whole = extract_features(windows)
    # slices of 5 over 24 windows (the last one short, one window without pods among them) change nothing
    mixed = [*windows[:7], replace(windows[7], pods=()), *windows[8:]]
    whole_mixed = extract_features(mixed)
    monkeypatch.setattr(extract, "FEATURE_SLICE", 5)
    np.testing.assert_array_equal(extract_features(windows), whole)
    np.testing.assert_array_equal(extract_features(mixed), whole_mixed)
    assert extract_features(mixed).shape == (len(windows), whole.shape[1]) and np.isnan(whole_mixed[7]).all()


def test_gather_copies_blocks_dicts_and_odd_pods_alike() -> None:
    rng = np.random.default_rng(0)
    names = ["gpu_util", "power_w", "cpu_cores"]
    values = rng.random((3, 6))
    block = PodWindow("a", "n", None, 1, SignalBlock(names, values))
    plain = PodWindow("b", "n", None, 2, dict(zip(names, values.copy(), strict=True)))
    unknown = PodWindow("c", "n", None, 1, {"gpu_util": values[0].copy(), "not_a_signal": values[1].copy()})
    short = PodWindow("d", "n", None, 1, SignalBlock(names[:1], values[:1, :4]))
    raw, caps = gather([block, plain, unknown, short], [6, 6, 6, 4], 6)
    for i in (0, 1):
        for j, name in enumerate(names):
            np.testing.assert_array_equal(raw[i, SIGNAL_NAMES.index(name)], values[j])
    np.testing.assert_array_equal(raw[2, SIGNAL_NAMES.index("gpu_util")], values[0])
    np.testing.assert_array_equal(raw[3, SIGNAL_NAMES.index("gpu_util")], [*values[0, :4], np.nan, np.nan])
    assert np.isnan(raw[0, SIGNAL_NAMES.index("sm_active")]).all() and np.isnan(raw[3, 1:]).all()
    np.testing.assert_array_equal(caps.gpus[:, 0], [1, 2, 1, 1])


def _plain_gather(pods: list[PodWindow], t: int) -> np.ndarray:
    """Each pod's known signals copied one by one, up to ``t`` samples."""
    raw = np.full((len(pods), len(SIGNAL_NAMES), t), np.nan)
    for i, pod in enumerate(pods):
        for name, values in pod.signals.items():
            if name in SIGNAL_NAMES:
                k = min(t, len(values))
                raw[i, SIGNAL_NAMES.index(name), :k] = values[:k]
    return raw


def test_gather_of_mixed_lengths_and_layouts_equals_the_plain_copy(windows: list[JobWindow]) -> None:
    rng = np.random.default_rng(1)
    pods, lengths = [], []
    for k, w in enumerate(windows):
        m = len(w.timestamps) - k % 3  # windows of three lengths: three groups
        for p in w.pods:
            names = [n for n in p.signals if rng.random() < 0.8]  # layouts with signals left out
            block = SignalBlock(names, np.stack([p.signals[n][:m] for n in names]).reshape(len(names), m))
            signals = dict(block.items()) if k % 4 == 1 else block
            pods.append(replace(p, signals=signals))
            lengths.append(m)
    ragged = dict(pods[0].signals.items())
    ragged[next(iter(ragged))] = np.ones(2)  # one series shorter than its window: that pod alone
    pods += [
        replace(pods[0], signals=ragged),
        replace(pods[0], signals={}),
        replace(pods[0], signals=SignalBlock.of({}, 0)),
    ]
    lengths += [lengths[0]] * 3
    t = max(lengths)
    raw, caps = gather(pods, lengths, t)
    np.testing.assert_array_equal(raw, _plain_gather(pods, t))
    assert all(raw[:, j, :].flags.c_contiguous for j in range(len(SIGNAL_NAMES)))
    np.testing.assert_array_equal(caps.gpus[:, 0], [p.gpu_count for p in pods])
    assert all(c.shape == (len(pods), 1) for c in caps)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_segment_sums_are_reduceats_to_the_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 14, size=40)  # short segments and a few longer than the row-by-row path
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    x = rng.normal(size=(int(sizes.sum()), 9)) * 10.0 ** rng.integers(-3, 6, size=(1, 9))
    np.testing.assert_array_equal(stats._segment_sum(x, starts), np.add.reduceat(x, starts, axis=0))


def test_plane_statistics_equal_the_summary(windows: list[JobWindow]) -> None:
    pods = [p for w in windows for p in w.pods]
    lengths = [len(w.timestamps) for w in windows for _ in w.pods]
    d = derived_series(*gather(pods, lengths, max(lengths)))
    d[:, :, ::3] = np.nan  # missing samples, and whole series missing where a signal is
    want = stats.summary(d, QUANTILES)
    got = np.empty_like(want)
    ranks = stats.quantile_ranks(d.shape[2], QUANTILES)
    for i in range(len(SERIES)):
        stats.summarise_rows(d[:, i, :].copy(), ranks, got[:, i, :])
    np.testing.assert_array_equal(got, want)


def test_derived_columns_in_place_equal_the_stacked_series(windows: list[JobWindow]) -> None:
    pods = [p for w in windows for p in w.pods]
    lengths = [len(w.timestamps) for w in windows for _ in w.pods]
    raw, caps = gather(pods, lengths, max(lengths))
    before = raw.copy()
    d = derived_series(raw, caps)
    np.testing.assert_array_equal(raw, before)  # the stacked path leaves its input alone
    cols = derived_columns(raw, caps, scratch=True)
    for i, name in enumerate(SERIES):
        np.testing.assert_array_equal(np.broadcast_to(cols[name], d[:, i, :].shape), d[:, i, :])
