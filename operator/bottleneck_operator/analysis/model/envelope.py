"""What the model was trained on, per feature, so a window from elsewhere is named as such.

Boosted trees extrapolate flat: a feature far outside anything seen in training falls into the
outermost leaf and the model answers as confidently as ever. The envelope keeps, per feature, the
range that held nearly all training rows, widened by a margin; a window with features of several
distinct signals outside it gets an "outside what the model knows" abstention instead of a confident
guess.

One signal far out is not enough: a real node differs from the simulator in some respect (a recording
node with no network traffic at all, an exporter restart), and the model's other features still
place the window. Spread statistics (``.cv``) never count: the coefficient of variation of a signal
that is structurally near zero (no traffic, no swap) is a ratio of two tiny numbers, and says nothing
about whether the job resembles the training data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.window import FloatArray

__all__ = ["MIN_SIGNALS", "Envelope", "fit_envelope", "signal_of"]

# Quantiles that bound the training range (robust to the augmentation's rare extremes) and the
# margin added on each side, as a fraction of that range.
LOW_QUANTILE, HIGH_QUANTILE, MARGIN = 0.001, 0.999, 1.0
# Distinct signals that must lie outside at once before a window counts as unfamiliar.
MIN_SIGNALS = 3


def signal_of(name: str) -> str:
    """The measured signal a feature summarises: "act.p90" and "act.mean.podmax" are both "act"."""
    return name.split(".", 1)[0]


@lru_cache(maxsize=4)
def _counted(names: tuple[str, ...]) -> npt.NDArray[np.bool_]:
    """Which features may make a window unfamiliar (spread statistics may not)."""
    return np.array([not n.endswith(".cv") for n in names], dtype=np.bool_)


@dataclass(frozen=True)
class Envelope:
    """Per-feature bounds of the training data (NaN bounds: the feature was never present).

    Attributes:
        low, high: lower and upper bound of each feature column.
    """

    low: FloatArray
    high: FloatArray

    def outside(self, x: FloatArray) -> np.ndarray:
        """Boolean matrix: where a present feature value lies outside the bounds."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            below = x < self.low
            above = x > self.high
        return np.asarray((below | above) & np.isfinite(x), dtype=np.bool_)

    def describe(self, row: FloatArray, names: Sequence[str], *, limit: int = 3) -> list[str]:
        """The features of one row outside the envelope, furthest first, in words."""
        row = np.asarray(row, dtype=np.float64)
        out = np.flatnonzero(self.outside(row[None, :])[0])
        width = np.where(self.high > self.low, self.high - self.low, 1.0)
        distance = np.maximum(self.low - row, row - self.high) / width
        ranked = out[np.argsort(-distance[out], kind="stable")][:limit]
        return [
            f"{names[i]} = {row[i]:.3g} (familiar range {self.low[i]:.3g} to {self.high[i]:.3g})"
            for i in ranked.tolist()
        ]

    def unfamiliar(self, row: FloatArray, names: Sequence[str], *, min_signals: int = MIN_SIGNALS) -> list[str]:
        """The window's features outside, one per signal and furthest first, when enough signals are.

        Args:
            row: one feature row.
            names: the feature names of its columns.
            min_signals: distinct signals that must lie outside.

        Returns:
            Their descriptions (at most ``min_signals``), or [] when the window is familiar enough.
        """
        row = np.asarray(row, dtype=np.float64)
        outside = self.outside(row[None, :])[0] & _counted(tuple(names))
        if not outside.any():
            return []
        signals = {signal_of(names[i]) for i in np.flatnonzero(outside).tolist()}
        if len(signals) < min_signals:
            return []
        masked = np.where(outside, row, np.nan)
        seen: set[str] = set()
        out: list[str] = []
        for words in self.describe(masked, names, limit=int(outside.sum())):
            signal = signal_of(words.split(" = ", 1)[0])
            if signal not in seen:
                seen.add(signal)
                out.append(words)
        return out[:min_signals]


def fit_envelope(x: FloatArray) -> Envelope:
    """The envelope of a training matrix.

    Args:
        x: training rows, NaN where a feature is missing.

    Returns:
        Bounds per column; a column never present gets NaN bounds, so it never counts as outside.
    """
    x = np.asarray(x, dtype=np.float64)
    present = np.isfinite(x).any(axis=0)
    low = np.full(x.shape[1], np.nan)
    high = np.full(x.shape[1], np.nan)
    if present.any():
        cols = x[:, present]
        q_lo = np.nanquantile(cols, LOW_QUANTILE, axis=0)
        q_hi = np.nanquantile(cols, HIGH_QUANTILE, axis=0)
        # A constant column gets a margin of its own scale, so a nearby value is not "outside".
        span = np.maximum(q_hi - q_lo, 0.05 * np.maximum(np.abs(q_lo), np.abs(q_hi)))
        low[present] = q_lo - MARGIN * span
        high[present] = q_hi + MARGIN * span
    return Envelope(low=low, high=high)
