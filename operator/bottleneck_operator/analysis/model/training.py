"""Model fitting (pure: windows and arrays in, a model out): the training set of windows and their
degraded copies (:mod:`.degrade`), the gradient-boosted classifier, and its temperature, fitted across
worlds where the training set spans several.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bottleneck_operator.analysis.features.extract import (
    CONTEXT_ONLY,
    FEATURE_INDEX,
    FEATURE_NAMES,
    extract_features,
    feature_schema_hash,
)
from bottleneck_operator.analysis.model.classifier import BottleneckModel, fit_temperature
from bottleneck_operator.analysis.model.degrade import degrade
from bottleneck_operator.analysis.model.envelope import fit_envelope
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import FloatArray, JobWindow
from bottleneck_operator.errors import ModelError

FEATURE_BATCH = 2048  # windows whose features are taken together while a training set is built


@dataclass(frozen=True)
class TrainingSet:
    """Feature rows with labels and a group id per source job (augmented copies share it)."""

    x: FloatArray
    y: np.ndarray[Any, np.dtype[np.intp]]
    groups: np.ndarray[Any, np.dtype[np.intp]]
    # which world (scenario family) each row comes from, None for one world
    worlds: np.ndarray[Any, np.dtype[np.intp]] | None = None

    def digest(self) -> str:
        """SHA-256 of the rows, labels and worlds: what a model learned from, so that a change to a
        simulator or a family that moves any row gives a retrained model another version, even when
        the recipe's counts are the same."""
        h = hashlib.sha256()
        for a in (self.x, self.y, self.groups, self.worlds):
            if a is not None:
                h.update(f"{a.dtype.str}{a.shape}".encode())
                h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def build_training_set(
    windows: Sequence[JobWindow],
    labels: Sequence[Bottleneck],
    *,
    copies: int,
    seed: int,
    worlds: Sequence[int] | None = None,
) -> TrainingSet:
    """Features of every window plus ``copies`` degraded variants of each.

    Args:
        windows: complete windows of labelled (unambiguous) jobs.
        labels: the class of each window (never Unknown).
        copies: degraded variants per window, in addition to the window itself.
        seed: seed of the degradation.
        worlds: the world (scenario family) of each window, when they come from more than one: the
            temperature is then fitted across worlds (see :func:`fit_model`).

    Returns:
        The training set.
    """
    marks = [0] * len(windows) if worlds is None else worlds
    data = stream_training_set(zip(windows, labels, marks, strict=True), copies=copies, seed=seed)
    return data if worlds is not None else replace(data, worlds=None)


def stream_training_set(jobs: Iterable[tuple[JobWindow, Bottleneck, int]], *, copies: int, seed: int) -> TrainingSet:
    """:func:`build_training_set` of (window, label, world) triples taken one at a time, so that a caller
    drawing many worlds holds one world's windows at once, not all of them (the rows are the same)."""
    rng = np.random.default_rng(seed)
    rows: list[FloatArray] = []
    y: list[int] = []
    groups: list[int] = []
    worlds: list[int] = []
    index = {c: i for i, c in enumerate(CLASSES)}
    batch: list[JobWindow] = []
    for g, (w, label, world) in enumerate(jobs):
        for k in range(copies + 1):
            batch.append(w if k == 0 else degrade(w, rng))
            y.append(index[label])
            groups.append(g)
            worlds.append(world)
        # the degraded copies are features as soon as a batch is full: holding every copy of every
        # window at once is what a large training draw cannot afford (rows are the same either way)
        if len(batch) >= FEATURE_BATCH:
            rows.append(extract_features(batch))
            batch = []
    if batch or not rows:
        rows.append(extract_features(batch))
    return TrainingSet(
        x=np.concatenate(rows),
        y=np.asarray(y, dtype=np.intp),
        groups=np.asarray(groups, dtype=np.intp),
        worlds=np.asarray(worlds, dtype=np.intp),
    )


def _estimator(*, seed: int, max_iter: int, learning_rate: float) -> Any:
    """The unfitted gradient-boosted classifier (scikit-learn is needed for training only)."""
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError as exc:  # the image carries no scikit-learn: training is a development task
        raise ModelError("training needs scikit-learn: pip install 'bottleneck-operator[train]'") from exc
    return HistGradientBoostingClassifier(
        max_iter=max_iter,
        learning_rate=learning_rate,
        max_leaf_nodes=15,
        min_samples_leaf=20,
        l2_regularization=1.0,
        # Each split chooses among a random 5 % of the features (about 18 of 353): a tree cannot lean on
        # the one cue that separates two classes in the simulator it learns from, so its splits spread
        # over the correlated physical signals, which telemetry from elsewhere shares. On the two
        # scenario families, against half the features per split (twelve fits each): the classifier's
        # cross-family macro-F1 0.880 -> 0.901 (A -> B) and 0.860 -> 0.881 (B -> A), same-family
        # unchanged (docs/scenarios.md).
        max_features=0.05,
        early_stopping=False,
        random_state=seed,
    )


def fit_model(
    data: TrainingSet,
    *,
    seed: int,
    version: str,
    calibration_share: float = 0.2,
    max_iter: int = 100,
    learning_rate: float = 0.15,
    metadata: dict[str, Any] | None = None,
    calibration: TrainingSet | None = None,
) -> BottleneckModel:
    """Fit the gradient-boosted classifier and its temperature.

    With one world the temperature is fitted on a held-out share of its jobs. With several it is
    fitted across them: each world's rows scored by a classifier fitted on the other worlds alone.
    Held-out jobs of the worlds a model was fitted on say how sure it may be at home; a world it never
    saw says how sure it may be on a cluster nobody simulated, which is what a user's cluster is.

    Args:
        data: the training set (groups keep a job's augmented copies on one side of the split).
        seed: random seed of the split and of the estimator.
        version: the model version to record.
        calibration_share: share of jobs held out to fit the temperature.
        max_iter: boosting iterations (fewer for quick test models; fewer also predict faster).
        learning_rate: shrinkage of each iteration.
        metadata: extra facts for the model card.
        calibration: rows of worlds the trees never train on, scored by the model itself and pooled
            with the rows above when the temperature is fitted (None: none).

    Returns:
        The fitted model.
    """
    rng = np.random.default_rng(seed)
    unique = np.unique(data.groups)
    held = set(rng.choice(unique, size=max(1, int(len(unique) * calibration_share)), replace=False).tolist())
    calib = np.array([g in held for g in data.groups])
    estimator = _estimator(seed=seed, max_iter=max_iter, learning_rate=learning_rate)
    names = np.array([c.value for c in CLASSES])
    x_train = data.x[~calib]
    estimator.fit(blind_context(x_train), names[data.y[~calib]])
    model = BottleneckModel(
        estimator, temperature=1.0, version=version, metadata=metadata, envelope=fit_envelope(x_train)
    )
    said = _temperature(model, data, calib, calibration, seed=seed, max_iter=max_iter, rate=learning_rate)
    model.metadata.update(
        {
            "calibration": said,
            "seed": seed,
            "training_rows": int((~calib).sum()),
            "calibration_rows": int(calib.sum()),
            "feature_count": len(FEATURE_NAMES),
            "feature_schema": feature_schema_hash(),
        }
    )
    return model


def _temperature(
    model: BottleneckModel,
    data: TrainingSet,
    calib: np.ndarray[Any, np.dtype[np.bool_]],
    calibration: TrainingSet | None,
    *,
    seed: int,
    max_iter: int,
    rate: float,
) -> str:
    """Set the model's temperature; return what it was fitted on, for the card.

    With several worlds, each world's rows as scored by a classifier fitted on the others; with one, the
    held-out jobs as the model scores them. Calibration worlds' rows, scored by the model itself (its
    trees never saw them), are pooled with either.
    """
    n_worlds = 0 if data.worlds is None else len(np.unique(data.worlds))
    if n_worlds >= 2:
        scores, truth = _cross_world_scores(data, model, seed=seed, max_iter=max_iter, rate=rate)
        said = f"across {n_worlds} worlds"
    else:
        scores = [model.raw_scores(data.x[calib])] if calib.any() else []
        truth = _columns(model, data.y[calib])
        said = "held-out jobs"
    if calibration is not None and len(calibration.y):
        scores.append(model.raw_scores(calibration.x))
        truth = [*truth, *_columns(model, calibration.y)]
        k = 1 if calibration.worlds is None else len(np.unique(calibration.worlds))
        said += f" and {k} calibration world{'s' if k != 1 else ''} the trees never saw ({len(calibration.y)} rows)"
    model.temperature = fit_temperature(np.concatenate(scores), truth) if scores else 1.0
    return said


def _columns(model: BottleneckModel, y: np.ndarray[Any, np.dtype[np.intp]]) -> list[int]:
    """Each row's true class as the column of the model's scores that holds it."""
    col = {c.value: i for i, c in enumerate(model.classes)}
    return [col[CLASSES[i].value] for i in y]


def _cross_world_scores(
    data: TrainingSet, model: BottleneckModel, *, seed: int, max_iter: int, rate: float
) -> tuple[list[FloatArray], list[int]]:
    """Each world's rows as scored by a classifier fitted on the other worlds alone, and their truth."""
    assert data.worlds is not None
    names = np.array([c.value for c in CLASSES])
    scores: list[FloatArray] = []
    truth: list[int] = []
    for world in np.unique(data.worlds):
        home = data.worlds != world
        estimator = _estimator(seed=seed, max_iter=max_iter, learning_rate=rate)
        estimator.fit(blind_context(data.x[home]), names[data.y[home]])
        other = BottleneckModel(estimator, temperature=1.0, version="cross-world")
        if list(other.classes) != list(model.classes):  # a world without every class cannot be scored
            continue
        scores.append(other.raw_scores(data.x[~home]))
        truth.extend(_columns(model, data.y[~home]))
    return scores, truth


_CONTEXT_COLUMNS = [FEATURE_INDEX[n] for n in CONTEXT_ONLY]


def blind_context(x: FloatArray) -> FloatArray:
    """The rows with the context-only features held constant, so that no tree can split on them.

    Trees grown on a constant column never read it, whatever value it holds at prediction time; the
    feature schema stays whole for the evidence and the report.
    """
    out = x.copy()
    out[:, _CONTEXT_COLUMNS] = 0.0
    # a column no training row reads (a family no training world exports) is as blind: scikit-learn's
    # binning cannot bin a column with no value at all
    out[:, ~np.isfinite(out).any(axis=0)] = 0.0
    return out
