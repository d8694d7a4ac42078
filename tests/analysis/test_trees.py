"""The numpy tree evaluator gives scikit-learn's scores exactly, by leaf masks or by a walk, and its file is
data only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bottleneck_operator.analysis.model.classifier import BottleneckModel, load_model
from bottleneck_operator.analysis.model.tree_masks import LeafMasks
from bottleneck_operator.analysis.model.trees import MASK_MIN_ROWS, TreeEnsemble, export_ensemble


@pytest.fixture(scope="module")
def ensemble(tiny_model: BottleneckModel) -> TreeEnsemble:
    return export_ensemble(tiny_model.estimator)


def _rows(width: int, seed: int, rows: int = 300, missing: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, width)) * rng.choice([0.1, 1.0, 100.0], size=width)
    x[rng.random(x.shape) < missing] = np.nan
    return x


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), missing=st.sampled_from([0.0, 0.3, 1.0]))
def test_scores_equal_scikit_learns(
    tiny_model: BottleneckModel, ensemble: TreeEnsemble, seed: int, missing: float
) -> None:
    x = _rows(tiny_model.estimator.n_features_in_, seed, missing=missing)
    np.testing.assert_allclose(ensemble.decision_function(x), tiny_model.estimator.decision_function(x), atol=1e-9)


def test_thresholds_themselves_go_left(tiny_model: BottleneckModel, ensemble: TreeEnsemble) -> None:
    # Rows made of the split thresholds: the "<=" edge is where a port of the trees goes wrong.
    width = tiny_model.estimator.n_features_in_
    x = np.full((64, width), np.nan)
    internal = np.flatnonzero(ensemble.left != np.arange(ensemble.left.size))
    rng = np.random.default_rng(1)
    for row in x:
        for node in rng.choice(internal, size=min(40, internal.size), replace=False):
            row[ensemble.feature[node]] = ensemble.threshold[node]
    np.testing.assert_allclose(ensemble.decision_function(x), tiny_model.estimator.decision_function(x), atol=1e-9)


def test_round_trip_and_no_pickle(ensemble: TreeEnsemble, tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    ensemble.save(path)
    loaded = TreeEnsemble.load(path)
    x = _rows(int(ensemble.feature.max()) + 1, 5)
    np.testing.assert_array_equal(loaded.decision_function(x), ensemble.decision_function(x))
    # An object array needs pickle to load: such a file is refused, never run.
    arrays = {name: np.load(path)[name] for name in np.load(path).files}
    np.savez(path, **{**arrays, "roots": np.array([object()], dtype=object)})
    with pytest.raises(ValueError, match="pickle"):
        TreeEnsemble.load(path)


def test_out_of_range_indices_are_refused(ensemble: TreeEnsemble, tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    arrays = {name: getattr(ensemble, name) for name in ("feature", "threshold", "missing_left", "value")}
    bad_left = ensemble.left.copy()
    bad_left[0] = ensemble.left.size + 5
    np.savez(
        path, left=bad_left, right=ensemble.right, roots=ensemble.roots, tree_column=ensemble.tree_column,
        tree_depth=ensemble.tree_depth, baseline=ensemble.baseline, **arrays,
    )  # fmt: skip
    with pytest.raises(ValueError, match="outside"):
        TreeEnsemble.load(path)


def test_leaf_masks_reach_the_leaves_of_a_walk(ensemble: TreeEnsemble) -> None:
    masks = LeafMasks.of(ensemble)
    assert masks is not None
    for seed, missing in ((0, 0.0), (1, 0.3), (2, 1.0)):
        x = _rows(int(ensemble.feature.max()) + 1, seed, missing=missing)
        np.testing.assert_array_equal(masks.leaves(x), ensemble._walk(x))


def test_a_few_rows_are_walked_and_batches_build_the_masks_once(tiny_model: BottleneckModel) -> None:
    """One Job's rows are walked (building the masks would cost more); a batch builds them and keeps them."""
    fresh = export_ensemble(tiny_model.estimator)
    x = _rows(tiny_model.estimator.n_features_in_, 3, rows=MASK_MIN_ROWS + 8, missing=0.3)
    few = fresh.decision_function(x[:2])
    assert "_masks" not in fresh.__dict__
    batch = fresh.decision_function(x)
    assert "_masks" in fresh.__dict__
    np.testing.assert_allclose(few, tiny_model.estimator.decision_function(x[:2]), atol=1e-9)
    np.testing.assert_array_equal(fresh.decision_function(x[:2]), few)  # by the masks now: the same scores
    np.testing.assert_allclose(batch, tiny_model.estimator.decision_function(x), atol=1e-9)


def test_shipped_model_leaves_are_those_of_a_walk() -> None:
    shipped = load_model().ensemble
    masks = LeafMasks.of(shipped)
    assert masks is not None
    x = _rows(int(shipped.feature.max()) + 1, 7, rows=200, missing=0.3)
    np.testing.assert_array_equal(masks.leaves(x), shipped._walk(x))


def test_trees_too_large_for_masks_are_walked() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 6))
    y = np.digitize(np.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2], [-0.5, 0.5])  # three classes
    x[rng.random(x.shape) < 0.1] = np.nan
    big = HistGradientBoostingClassifier(max_iter=3, max_leaf_nodes=100, min_samples_leaf=2).fit(x, y)
    ensemble = export_ensemble(big)
    assert LeafMasks.of(ensemble) is None
    np.testing.assert_allclose(ensemble.decision_function(x[:300]), big.decision_function(x[:300]), atol=1e-9)


def test_a_cycle_in_a_damaged_file_falls_back_to_the_bounded_walk(ensemble: TreeEnsemble) -> None:
    arrays = dict(ensemble.arrays())
    root = int(ensemble.roots[0])
    left = ensemble.left.copy()
    left[int(ensemble.left[root])] = root  # a child that points back to its parent
    arrays["left"] = left
    damaged = TreeEnsemble.from_arrays(arrays)
    assert LeafMasks.of(damaged) is None
    assert damaged.decision_function(_rows(int(ensemble.feature.max()) + 1, 3)).shape[1] == ensemble.columns


@pytest.mark.parametrize("leaves", [6, 30, 60])
def test_masks_of_every_width_give_scikit_learns_scores(leaves: int) -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(leaves)
    x = rng.normal(size=(3000, 6))
    y = np.digitize(np.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2], [-0.5, 0.5])
    x[rng.random(x.shape) < 0.1] = np.nan
    model = HistGradientBoostingClassifier(max_iter=3, max_leaf_nodes=leaves, min_samples_leaf=2).fit(x, y)
    ensemble = export_ensemble(model)
    masks = LeafMasks.of(ensemble)
    assert masks is not None and masks.mask.dtype.itemsize * 8 >= masks.leaf.shape[1]
    np.testing.assert_allclose(ensemble.decision_function(x[:300]), model.decision_function(x[:300]), atol=1e-9)


def test_leaf_values_are_the_values_of_the_leaves(ensemble: TreeEnsemble) -> None:
    masks = LeafMasks.of(ensemble)
    assert masks is not None
    x = _rows(int(ensemble.feature.max()) + 1, 4, missing=0.3)
    np.testing.assert_array_equal(masks.values(x, ensemble.value), ensemble.value.take(ensemble._walk(x)))


def test_splits_that_make_the_same_test_share_it() -> None:
    """Each distinct (feature, missing side, threshold) is tested once; every split still reads its own."""
    shipped = load_model().ensemble
    masks = LeafMasks.of(shipped)
    assert masks is not None
    assert len(masks.key) < masks.test.size
    assert len(set(zip(masks.key.tolist(), masks.threshold.tolist(), strict=True))) == len(masks.key)
