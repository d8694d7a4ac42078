"""Evaluating small trees by leaf bit masks instead of walking them (after QuickScorer, Lucchese et al.,
SIGIR 2015).

Number a tree's leaves left to right. A split that sends a row right rules out every leaf of its left
subtree, and the leaf the row reaches is the leftmost leaf that no such split rules out. So each split
carries a mask of the leaves it leaves possible; a row's leaf is the lowest bit set in the AND of the
masks of the splits it fails, and every split of every tree is tested for all rows in a few array
operations, with no step-by-step walk through node indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.window import FloatArray

__all__ = ["LeafMasks"]

IntArray = npt.NDArray[np.intp]
# The narrowest unsigned type holding one bit per leaf; trees with more leaves are walked instead.
_MASK_TYPES = ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64))


@dataclass(frozen=True)
class LeafMasks:
    """Every tree's splits and leaves, padded to the same count per tree.

    Splits of different trees often make the same test (a feature against one of its few histogram
    bin edges): each distinct test is made once per row, and every split reads its outcome.

    Attributes:
        key: per distinct test, ``2·feature + missing_left``: the row of the doubled feature matrix it
            reads (see :meth:`leaves`).
        threshold: per distinct test, a row passes (goes left) when its value is ``<= threshold``.
        test: per tree and split, the index of its test in ``key`` and ``threshold``; padding splits
            take any test (their mask keeps every leaf).
        mask: per split, the leaves still possible when a row fails it; all ones for padding.
        leaf: per tree, the node index of each leaf, left to right.
    """

    key: IntArray
    threshold: FloatArray
    test: IntArray
    mask: npt.NDArray[Any]
    leaf: IntArray

    @classmethod
    def of(cls, ensemble: Any) -> LeafMasks | None:
        """Masks of a :class:`~.trees.TreeEnsemble`'s trees, or None if a tree has more than 64 leaves
        or is not a binary tree of depth below 64."""
        # each tree's nodes are one block of the node arrays, and a binary tree of n nodes has (n+1)/2 leaves
        blocks = np.diff(np.append(np.sort(ensemble.roots), ensemble.feature.size))
        if blocks.size and blocks.max() > 2 * 64 - 1:
            return None
        try:
            trees = [_tree(ensemble, int(root)) for root in ensemble.roots]
        except RecursionError:
            return None
        n_leaves = max((len(leaves) for _, leaves in trees), default=1)
        dtype = next((t for bits, t in _MASK_TYPES if n_leaves <= bits), None)
        if dtype is None:
            return None
        n_splits = max(max((len(splits) for splits, _ in trees), default=1), 1)
        key = np.zeros((len(trees), n_splits), dtype=np.intp)
        threshold = np.zeros((len(trees), n_splits))
        mask = np.full((len(trees), n_splits), np.iinfo(dtype).max, dtype=dtype)
        leaf = np.zeros((len(trees), n_leaves), dtype=np.intp)
        for i, (splits, leaves) in enumerate(trees):
            leaf[i, : len(leaves)] = leaves
            for j, (node, lo, hi) in enumerate(splits):
                key[i, j] = 2 * int(ensemble.feature[node]) + int(ensemble.missing_left[node])
                threshold[i, j] = ensemble.threshold[node]
                mask[i, j] = ((1 << n_leaves) - 1) & ~((1 << (hi + 1)) - (1 << lo))
        pairs = np.column_stack([key.ravel().astype(np.float64), threshold.ravel()])
        tests, test = np.unique(pairs, axis=0, return_inverse=True)
        return cls(tests[:, 0].astype(np.intp), tests[:, 1].astype(np.float64), test.reshape(key.shape), mask, leaf)

    def leaves(self, x: FloatArray) -> IntArray:
        """The leaf node each row reaches in each tree, shape (rows, trees).

        Args:
            x: feature rows, NaN where a feature is missing.
        """
        return np.asarray(self.leaf.ravel().take(self._positions(x).T), dtype=np.intp)

    def values(self, x: FloatArray, value: FloatArray) -> FloatArray:
        """``value.take(self.leaves(x))``: each row's leaf value in each tree, in one gather of the rows'
        leaves from a table of the trees' leaf values rather than two.

        Args:
            x: feature rows, NaN where a feature is missing.
            value: each node's value (a :class:`~.trees.TreeEnsemble`'s ``value``).
        """
        return np.asarray(value.take(self.leaf).ravel().take(self._positions(x).T), dtype=np.float64)

    def _positions(self, x: FloatArray) -> IntArray:
        """Per tree and row, shape (trees, rows): the row's leaf as a position in ``self.leaf.ravel()``."""
        rows, width = x.shape
        trees, n_splits = self.test.shape
        # Each feature twice: as given (NaN fails every "<=", so it goes right) and with NaN as -inf
        # (passes every "<=", so it goes left); a split reads the copy its missing-value side selects.
        both = np.empty((width, 2, rows))
        given = both[:, 0, :]
        given[...] = x.T
        # fmax against -inf is the identity but for NaN, which it turns into -inf: one pass, where a
        # second transposed copy and a masked fill would take three
        np.fmax(given, -np.inf, out=both[:, 1, :])
        features = both.reshape(2 * width, rows)
        # each distinct test's outcome for every row, a block of tests at a time to stay in cache
        passed = np.empty((len(self.key), rows), dtype=bool)
        step = max(1, _BLOCK // max(rows, 1))
        for start in range(0, len(self.key), step):
            block = slice(start, start + step)
            np.less_equal(features.take(self.key[block], axis=0), self.threshold[block, None], out=passed[block])
        index = np.empty((trees, rows), dtype=np.intp)
        # a block of trees at a time, so that the (trees x splits x rows) masks stay in cache
        step = max(1, _BLOCK // max(n_splits * rows, 1))
        for start in range(0, trees, step):
            stop = min(start + step, trees)
            index[start:stop] = self._lowest_leaf(passed, slice(start, stop))
        index += (np.arange(trees, dtype=np.intp) * self.leaf.shape[1])[:, None]
        return index

    def _lowest_leaf(self, passed: npt.NDArray[np.bool_], block: slice) -> IntArray:
        """Per tree of ``block`` and row: the position of the row's leaf among the tree's leaves."""
        test, mask = self.test[block], self.mask[block]
        outcome = passed.take(test.ravel(), axis=0).reshape(*test.shape, passed.shape[1])
        # a passed split keeps every leaf possible (all ones), a failed one its mask
        kept = np.negative(outcome, dtype=mask.dtype)
        kept |= mask[:, :, None]
        possible = np.bitwise_and.reduce(kept, axis=1)
        if possible.dtype.itemsize <= 2:  # the lowest set bit's position, looked up
            return np.asarray(_LOWEST_BIT.take(possible), dtype=np.intp)
        return _lowest_bit(possible)


def _lowest_bit(masks: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.intp]:
    """The position of each mask's lowest set bit (-1 for 0)."""
    # a power of two is exact in float64: its exponent is the bit's position (+1)
    lowest = (masks & np.negative(masks)).astype(np.float64)
    return np.asarray(np.frexp(lowest)[1], dtype=np.intp) - 1


_BLOCK = 1 << 17  # split tests per block: 1 MiB of float64
# position of the lowest set bit of every 16-bit mask (0 for 0: no row has an empty mask)
_LOWEST_BIT = np.maximum(_lowest_bit(np.arange(1 << 16)), 0)


def _tree(ensemble: Any, root: int) -> tuple[list[tuple[int, int, int]], list[int]]:
    """A tree's splits, each with the range of leaves of its left subtree, and its leaves left to right."""
    splits: list[tuple[int, int, int]] = []
    leaves: list[int] = []
    left, right = ensemble.left, ensemble.right

    def visit(node: int, depth: int = 0) -> None:
        if depth > 64:  # a cycle in a damaged file, or a tree deeper than any mask
            raise RecursionError("tree too deep for leaf masks")
        if int(left[node]) == node:
            leaves.append(node)
            return
        first = len(leaves)
        visit(int(left[node]), depth + 1)
        splits.append((node, first, len(leaves) - 1))
        visit(int(right[node]), depth + 1)

    visit(root)
    return splits, leaves
