"""A gradient-boosted tree ensemble as plain arrays, evaluated with numpy: inference without scikit-learn.

Training uses scikit-learn's HistGradientBoostingClassifier; :func:`export_ensemble` copies its
fitted trees into flat arrays, which :meth:`TreeEnsemble.decision_function` evaluates for every row
and every tree at once. The arrays are saved with ``numpy.savez`` and read with
``allow_pickle=False``: a model file is data only, it cannot run code when loaded, and loading it
imports neither scikit-learn nor SciPy (most of the operator's start-up time and memory otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.model.tree_masks import LeafMasks
from bottleneck_operator.contract.window import FloatArray

__all__ = ["TreeEnsemble", "export_ensemble"]

IntArray = npt.NDArray[np.int32]
MASK_MIN_ROWS = 32  # rows from which scoring builds the leaf masks (see decision_function)
BoolArray = npt.NDArray[np.bool_]
_FIELDS = (
    "feature", "threshold", "left", "right", "missing_left", "value", "roots", "tree_column", "tree_depth", "baseline",
)  # fmt: skip


@dataclass(frozen=True)
class TreeEnsemble:
    """Every tree of a boosted ensemble in flat node arrays.

    A leaf's ``left`` and ``right`` point to itself, so a walk of ``depth`` steps from each root ends
    on the leaf whatever the tree's own depth. Trees are stored deepest first, so each step of the
    walk takes only the leading trees that are still deeper than it.

    Attributes:
        feature: feature column tested at each node.
        threshold: a row goes left when its value is ``<= threshold``.
        left, right: absolute indices of the children.
        missing_left: where a missing (NaN) value goes.
        value: each node's contribution (leaves only are read).
        roots: index of each tree's root.
        tree_column: the output column (class) each tree adds to.
        tree_depth: each tree's deepest leaf, non-increasing.
        baseline: the constant score of each column before any tree.
    """

    feature: IntArray
    threshold: FloatArray
    left: IntArray
    right: IntArray
    missing_left: BoolArray
    value: FloatArray
    roots: IntArray
    tree_column: IntArray
    tree_depth: IntArray
    baseline: FloatArray

    @property
    def columns(self) -> int:
        return int(self.baseline.shape[0])

    def decision_function(self, x: FloatArray) -> FloatArray:
        """Raw scores, shape (rows, columns): the same numbers scikit-learn's ``decision_function`` gives.

        Args:
            x: feature rows, NaN where a feature is missing.

        Returns:
            baseline + the sum of every tree's leaf value, per column.
        """
        x = np.asarray(x, dtype=np.float64)
        # Building the leaf masks costs as much as walking a few hundred rows: a process that scores
        # a handful of rows once (``analyze`` on one Job) walks; one that scores batches builds them
        # once and keeps them. Both give the same leaves.
        built = "_masks" in self.__dict__
        masks = self._masks if built or len(x) >= MASK_MIN_ROWS else None
        values = masks.values(x, self.value) if masks is not None else self.value.take(self._walk(x))
        one_hot = (self.tree_column[:, None] == np.arange(self.columns)[None, :]).astype(np.float64)
        return np.asarray(values @ one_hot + self.baseline, dtype=np.float64)

    def _walk(self, x: FloatArray) -> npt.NDArray[np.intp]:
        """The leaf each row reaches in each tree, shape (rows, trees), by walking all trees at once."""
        rows, width = x.shape
        flat = x.ravel()
        row_start = (np.arange(rows, dtype=np.intp) * width)[:, None]
        # children[2·n] is the right child of node n, children[2·n + 1] the left one
        children = np.stack([self.right, self.left], axis=1).ravel().astype(np.intp)
        feature = self.feature.astype(np.intp)
        node = np.broadcast_to(self.roots.astype(np.intp), (rows, self.roots.size)).copy()
        deeper = -self.tree_depth
        for step in range(int(self.tree_depth[0]) if self.tree_depth.size else 0):
            live = int(np.searchsorted(deeper, -(step + 1), side="right"))  # trees deeper than `step`
            at = node[:, :live]
            seen = flat.take(row_start + feature.take(at))
            go_left = (seen <= self.threshold.take(at)) | (np.isnan(seen) & self.missing_left.take(at))
            node[:, :live] = children.take(2 * at + go_left)
        return node

    @cached_property
    def _masks(self) -> LeafMasks | None:
        """The trees as leaf masks (built once), or None when a tree has too many leaves for them."""
        return LeafMasks.of(self)

    def arrays(self) -> dict[str, Any]:
        """The ensemble as named plain arrays (what :meth:`save` writes)."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], *, features: int | None = None) -> TreeEnsemble:
        """Build and check an ensemble from named arrays (the inverse of :meth:`arrays`).

        Args:
            arrays: the named arrays, as read from a file.
            features: the number of feature columns rows will have; None: not checked.

        Raises:
            KeyError: an array is missing; ValueError: the arrays do not form an ensemble (naming the array).
        """
        ensemble = cls(
            feature=_integers(arrays, "feature"),
            threshold=_reals(arrays, "threshold"),
            left=_integers(arrays, "left"),
            right=_integers(arrays, "right"),
            missing_left=_integers(arrays, "missing_left", flags=True).astype(np.bool_),
            value=_reals(arrays, "value"),
            roots=_integers(arrays, "roots"),
            tree_column=_integers(arrays, "tree_column"),
            tree_depth=_integers(arrays, "tree_depth"),
            baseline=_reals(arrays, "baseline"),
        )
        ensemble.check(features=features)
        return ensemble

    def save(self, path: Path) -> None:
        """Write the arrays to an ``.npz`` file (no pickled objects)."""
        np.savez_compressed(path, **self.arrays())

    @classmethod
    def load(cls, path: Path) -> TreeEnsemble:
        """Read an ensemble written by :meth:`save`; refuses any pickled content.

        Raises:
            ValueError / KeyError / OSError: the file is not such an ensemble.
        """
        with np.load(path, allow_pickle=False) as data:
            return cls.from_arrays({name: np.array(data[name]) for name in _FIELDS})

    def check(self, *, features: int | None = None) -> None:
        """Refuse arrays that would index out of bounds or score NaN (a damaged or hand-made file).

        Args:
            features: the number of feature columns; None: feature indices are only checked for sign.

        Raises:
            ValueError: naming the array at fault.
        """
        n = self.feature.size
        same = {a.size for a in (self.threshold, self.left, self.right, self.missing_left, self.value)}
        if same != {n} or not self.roots.size == self.tree_column.size == self.tree_depth.size:
            raise ValueError("tree arrays of different lengths")
        if not self.baseline.size:
            raise ValueError("tree array baseline is empty: no class columns")
        if self.tree_depth.size and (np.any(np.diff(self.tree_depth) > 0) or self.tree_depth.min() < 0):
            raise ValueError("trees are not ordered deepest first")
        for name, idx, bound in (
            ("left", self.left, n),
            ("right", self.right, n),
            ("roots", self.roots, n),
            ("tree_column", self.tree_column, self.columns),
            ("feature", self.feature, features),
        ):
            if idx.size and (idx.min() < 0 or (bound is not None and idx.max() >= bound)):
                raise ValueError(f"tree array {name} points outside the ensemble (index out of range)")
        # Scores must be numbers: a NaN or infinite leaf would give every class a NaN probability.
        for name, reals in (("value", self.value), ("baseline", self.baseline)):
            if not np.isfinite(reals).all():
                raise ValueError(f"tree array {name} holds NaN or infinite values")
        # +inf is a real split (every non-missing value goes left); NaN or -inf is not.
        if np.isnan(self.threshold).any() or np.isneginf(self.threshold).any():
            raise ValueError("tree array threshold holds NaN or -inf")


def _array(arrays: Mapping[str, Any], name: str) -> npt.NDArray[Any]:
    array = np.asarray(arrays[name])
    if array.ndim != 1:
        raise ValueError(f"tree array {name} has shape {array.shape}, not one dimension")
    return array


def _integers(arrays: Mapping[str, Any], name: str, *, flags: bool = False) -> IntArray:
    """An index array: integers (or booleans for ``flags``) that fit 32 bits, never floats cast silently."""
    array = _array(arrays, name)
    if flags and array.dtype.kind == "b":
        return array.astype(np.int32)
    if array.dtype.kind not in "iu":
        raise ValueError(f"tree array {name} holds {array.dtype}, not integers")
    info = np.iinfo(np.int32)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise ValueError(f"tree array {name} holds integers beyond 32 bits")
    return array.astype(np.int32)


def _reals(arrays: Mapping[str, Any], name: str) -> FloatArray:
    array = _array(arrays, name)
    if array.dtype.kind not in "fiu":
        raise ValueError(f"tree array {name} holds {array.dtype}, not numbers")
    return array.astype(np.float64)


def export_ensemble(estimator: Any) -> TreeEnsemble:
    """Copy a fitted HistGradientBoostingClassifier's trees into a :class:`TreeEnsemble`.

    Args:
        estimator: the fitted scikit-learn estimator (numeric features only).

    Returns:
        The ensemble; its ``decision_function`` equals the estimator's.

    Raises:
        ValueError: the estimator uses categorical splits, which this evaluator does not follow.
    """
    parts: dict[str, list[Any]] = {name: [] for name in ("feature", "threshold", "left", "right", "missing", "value")}
    roots: list[int] = []
    columns: list[int] = []
    depths: list[int] = []
    offset = 0
    for iteration in estimator._predictors:
        for column, predictor in enumerate(iteration):
            nodes = predictor.nodes
            if nodes["is_categorical"].any():
                raise ValueError("categorical splits are not supported")
            own = np.arange(nodes.shape[0], dtype=np.int64) + offset
            leaf = nodes["is_leaf"].astype(bool)
            parts["feature"].append(np.where(leaf, 0, nodes["feature_idx"]))
            parts["threshold"].append(nodes["num_threshold"])
            parts["left"].append(np.where(leaf, own, nodes["left"] + offset))
            parts["right"].append(np.where(leaf, own, nodes["right"] + offset))
            parts["missing"].append(nodes["missing_go_to_left"].astype(bool))
            parts["value"].append(nodes["value"])
            roots.append(offset)
            columns.append(column)
            depths.append(int(nodes["depth"].max()))
            offset += nodes.shape[0]
    baseline = np.asarray(estimator._baseline_prediction, dtype=np.float64).reshape(-1)
    order = np.argsort(-np.asarray(depths), kind="stable")
    ensemble = TreeEnsemble(
        feature=np.concatenate(parts["feature"]).astype(np.int32),
        threshold=np.concatenate(parts["threshold"]).astype(np.float64),
        left=np.concatenate(parts["left"]).astype(np.int32),
        right=np.concatenate(parts["right"]).astype(np.int32),
        missing_left=np.concatenate(parts["missing"]).astype(np.bool_),
        value=np.concatenate(parts["value"]).astype(np.float64),
        roots=np.asarray(roots, dtype=np.int32)[order],
        tree_column=np.asarray(columns, dtype=np.int32)[order],
        tree_depth=np.asarray(depths, dtype=np.int32)[order],
        baseline=baseline,
    )
    ensemble.check()
    return ensemble
