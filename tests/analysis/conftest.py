"""Fixtures of the analysis tests: a tiny model trained on hand-built windows, a fixed-probability classifier."""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.analysis.model.classifier import BottleneckModel
from bottleneck_operator.analysis.model.training import build_training_set, fit_model
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import FloatArray

from .synth import make_window


@pytest.fixture(scope="session")
def tiny_model() -> BottleneckModel:
    """A small model fitted on noisy textbook windows of every class (a few seconds to train)."""
    windows, labels = [], []
    for cls in CLASSES:
        for seed in range(24):
            windows.append(make_window(cls, seed=seed, noise=0.15, pods=1 + seed % 2))
            labels.append(cls)
    data = build_training_set(windows, labels, copies=1, seed=3)
    return fit_model(data, seed=3, version="test-tiny", max_iter=40)


class FixedModel:
    """A classifier that returns the same probabilities for every row (to test the decision rules)."""

    def __init__(self, probs: dict[Bottleneck, float], version: str = "fixed") -> None:
        self.classes = tuple(CLASSES)
        self.version = version
        self._row = np.array([probs.get(c, 0.0) for c in self.classes])

    def predict_proba(self, x: FloatArray) -> FloatArray:
        return np.tile(self._row, (len(x), 1))
