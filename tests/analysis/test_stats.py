"""The fast numeric primitives give the values of straightforward numpy references, and features and
verdicts are what the plain per-series computation gives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bottleneck_operator.analysis.features import derived, elementwise, stats
from bottleneck_operator.analysis.features.derived import derived_series
from bottleneck_operator.analysis.features.extract import (
    QUANTILES,
    extract_features,
    features_from_pods,
    training_samples,
)
from bottleneck_operator.analysis.features.gather import gather
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.analysis.features.series_names import SERIES_INDEX
from bottleneck_operator.analysis.model.classifier import load_model
from bottleneck_operator.contract.window import FloatArray, JobWindow
from bottleneck_operator_dev.commands.train import simulated_windows


def _series(seed: int, shape: tuple[int, ...], missing: float) -> FloatArray:
    rng = np.random.default_rng(seed)
    d = rng.normal(size=shape) * rng.choice([1e-4, 1.0, 1e3], size=(*shape[:-1], 1))
    d[rng.random(shape) < missing] = np.nan
    d.reshape(-1, shape[-1])[::7] = np.nan  # series with no sample at all
    d.reshape(-1, shape[-1])[1::11, 1:] = np.nan  # series with one sample
    d.reshape(-1, shape[-1])[2::13] = np.round(d.reshape(-1, shape[-1])[2::13])  # ties
    return d


def _reference_summary(d: FloatArray) -> FloatArray:
    """Mean, nearest-rank quantiles and capped cv, one numpy call each."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(d, axis=-1)
        q = np.moveaxis(np.nanquantile(d, QUANTILES, axis=-1, method="nearest"), 0, -1)
        cv = np.minimum(np.nanstd(d, axis=-1) / np.maximum(np.abs(mean), 1e-3), 10.0)
    return np.concatenate([mean[..., None], q, cv[..., None]], axis=-1)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    missing=st.sampled_from([0.0, 0.3, 0.9]),
    t=st.integers(1, 40),
    block=st.sampled_from([1, 37, 1 << 16]),
)
def test_summary_equals_nanmean_nanquantile_nanstd(seed: int, missing: float, t: int, block: int) -> None:
    d = _series(seed, (5, 9, t), missing)
    old_block = stats._BLOCK
    stats._BLOCK = block  # blocks of one series, of a few, and of all
    try:
        got = stats.summary(d, QUANTILES)
    finally:
        stats._BLOCK = old_block
    want = _reference_summary(d)
    assert got.shape == (5, 9, len(QUANTILES) + 2)
    np.testing.assert_array_equal(got[..., 1:-1], want[..., 1:-1])  # quantiles are samples: exact
    # sums in another order: equal to rounding, relative to the series' largest value
    scale = np.nanmax(np.abs(d), axis=-1, initial=0.0)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.all(np.nan_to_num(np.abs(got[..., 0] - want[..., 0])) <= 1e-13 * scale)
    # cv from the mean of squares: numpy's two-pass std to rounding, and both capped at 10
    np.testing.assert_allclose(got[..., -1], want[..., -1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("t", [255, 256, 300])
def test_summary_of_long_series_equals_the_reference(t: int) -> None:
    # from 256 samples a series' count no longer fits a byte: counted another way
    d = _series(8, (3, 7, t), 0.3)
    got, want = stats.summary(d, QUANTILES), _reference_summary(d)
    np.testing.assert_array_equal(got[..., 1:-1], want[..., 1:-1])
    np.testing.assert_allclose(got[..., 0], want[..., 0], rtol=1e-12)


@pytest.mark.parametrize("empty", [0.0, 0.5, 1.0])
def test_series_without_samples_summarise_to_nan(empty: float) -> None:
    # a few series without a sample go through with the others, many are left out, all give all NaN
    d = _series(14, (80, 12), 0.2)
    d[np.random.default_rng(14).random(80) < empty] = np.nan
    got = np.empty((80, len(QUANTILES) + 2))
    stats.summarise_rows(d.copy(), stats.quantile_ranks(12, QUANTILES), got)
    np.testing.assert_array_equal(got, stats.summary(d, QUANTILES))
    assert np.isnan(got[np.isnan(d).all(axis=1)]).all()
    np.testing.assert_array_equal(got[..., 1:-1], _reference_summary(d)[..., 1:-1])


def test_row_sums_are_those_numpy_takes_along_each_row() -> None:
    """The mean's sum is numpy's own along each row: the statistics stay those of the straightforward code."""
    rows = _series(9, (50, 30), 0.4)
    rows.sort(axis=-1)
    out = np.empty((50, len(QUANTILES) + 2))
    count = (~np.isnan(rows)).sum(axis=1)
    stats.summarise_rows(rows.copy(), stats.quantile_ranks(30, QUANTILES), out)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(out[:, 0], np.where(np.isnan(rows), 0.0, rows).sum(axis=1) / count)


def test_row_means_are_the_summary_s_mean() -> None:
    d = _series(5, (40, 30), 0.3)
    want = stats.summary(d, QUANTILES)[:, 0]
    got = stats.row_means(d.copy())
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got[0])  # row 0 has no sample
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.nanmax(np.abs(d)))


def test_row_peaks_are_each_rows_largest_sample() -> None:
    d = _series(5, (40, 30), 0.3)
    want = [r[~np.isnan(r)].max() if (~np.isnan(r)).any() else np.nan for r in d]
    got = stats.row_peaks(d)
    assert np.isnan(got[0])  # row 0 has no sample
    np.testing.assert_array_equal(got, want)


def test_summary_leaves_its_input_alone() -> None:
    d = _series(3, (4, 6, 12), 0.3)
    before = d.copy()
    stats.summary(d, QUANTILES)
    np.testing.assert_array_equal(d, before)


def test_segment_means_of_long_segments() -> None:
    # segments past the short path, one with more rows than a byte counts
    x = _series(12, (700, 5), 0.3)
    starts = np.array([0, 1, 3, 12, 40, 400, 699], dtype=np.intp)
    ends = [*starts[1:], len(x)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.stack([np.nanmean(x[s:e], axis=0) for s, e in zip(starts, ends, strict=True)])
    np.testing.assert_allclose(stats.nan_segment_mean(x, starts), want, rtol=1e-12)
    valid = (~np.isnan(x)).view(np.uint8)
    np.testing.assert_array_equal(
        stats._segment_sum(valid, starts, np.dtype(np.float64)),
        np.add.reduceat(valid, starts, axis=0, dtype=np.float64),
    )


def test_segment_mean_equals_nanmean_per_segment() -> None:
    x = _series(4, (30, 7), 0.4)
    starts = np.array([0, 3, 4, 12, 29], dtype=np.intp)
    ends = [*starts[1:], len(x)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.stack([np.nanmean(x[s:e], axis=0) for s, e in zip(starts, ends, strict=True)])
    np.testing.assert_allclose(stats.nan_segment_mean(x, starts), want, rtol=1e-12)


def test_derived_helpers_equal_plain_numpy() -> None:
    a = _series(5, (20, 16), 0.3)
    b = _series(6, (20, 16), 0.3)
    a[0, :3] = [np.inf, -np.inf, 0.0]
    b[0, :3] = [1.0, np.inf, 0.0]
    both = np.isnan(a) & np.isnan(b)
    want_sum = np.nan_to_num(a) + np.nan_to_num(b)
    want_sum[both] = np.nan
    np.testing.assert_array_equal(elementwise.nan_sum(a, b), want_sum)
    with np.errstate(divide="ignore", invalid="ignore"):
        want_div = a / b
    want_div[~np.isfinite(want_div)] = np.nan
    np.testing.assert_array_equal(elementwise.div(a, b), want_div)
    np.testing.assert_array_equal(elementwise.coalesce(a, b), np.where(np.isnan(a), b, a))
    peak = np.where(np.isnan(a), -np.inf, a).max(axis=1, keepdims=True)
    peak[~np.isfinite(peak) | (peak <= 0)] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        want_peak = a / peak
    want_peak[~np.isfinite(want_peak)] = np.nan
    np.testing.assert_array_equal(elementwise.rel_peak(a), want_peak)


def _bits(a: FloatArray) -> np.ndarray:
    """The values' bit patterns (the sign of a zero included), NaN as one pattern whatever its payload."""
    return np.where(np.isnan(a), -1, a.view(np.int64))


def test_fast_plane_helpers_are_numpys_to_the_bit() -> None:
    x = _series(13, (20, 16), 0.3)
    x[0, :6] = [np.inf, -np.inf, 0.0, -0.0, WAITED_ON, -WAITED_ON]
    np.testing.assert_array_equal(_bits(elementwise.nan_to_num(x)), _bits(np.nan_to_num(x)))
    for low in (0.05, 1.0, -2.0):
        np.testing.assert_array_equal(_bits(elementwise.floor(x, low)), _bits(np.maximum(x, low)))
    band = np.maximum(x - WAITED_ON, 0.0) / (1.0 - WAITED_ON)
    np.testing.assert_array_equal(_bits(derived._band(x)), _bits(band))
    per = np.full((20, 1), 2.0)
    with np.errstate(invalid="ignore"):
        want = np.log10(1.0 + np.maximum(x, 0.0) / per)
    np.testing.assert_array_equal(_bits(elementwise.log_rate(x, per)), _bits(want))


@pytest.fixture(scope="module")
def held_out() -> list[JobWindow]:
    return simulated_windows(4242, 40, holdout=True)[1]


def _plain_features(windows: list[JobWindow]) -> FloatArray:
    """Features from per-series statistics taken with plain numpy."""
    pods = [p for w in windows for p in w.pods]
    lengths = [len(w.timestamps) for w in windows for _ in w.pods]
    d = training_samples(derived_series(*gather(pods, lengths, max(lengths))))
    act = d[:, SERIES_INDEX["act"], :]
    with np.errstate(invalid="ignore", divide="ignore"):
        low = (act < 0.3).sum(axis=1) / (~np.isnan(act)).sum(axis=1)
    offsets = list(np.cumsum([0] + [len(w.pods) for w in windows])[:-1])
    return features_from_pods(windows, _reference_summary(d), low[:, None], offsets)


def test_features_and_verdicts_equal_the_plain_computation(held_out: list[JobWindow]) -> None:
    fast, plain = extract_features(held_out), _plain_features(held_out)
    # to rounding; a flat series' cv reads ~1e-8 from a mean of squares, 0 from a two-pass std
    np.testing.assert_allclose(fast, plain, rtol=1e-6, atol=1e-6)
    model = load_model()
    np.testing.assert_array_equal(model.predict_proba(fast).argmax(axis=1), model.predict_proba(plain).argmax(axis=1))
