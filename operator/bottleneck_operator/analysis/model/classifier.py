"""The classifier: a gradient-boosted tree ensemble with temperature-scaled probabilities.

Two files come out of training. ``bottleneck-model.npz`` is what the operator runs: the trees as
plain arrays (:mod:`analysis.trees`) plus a JSON header, read with ``allow_pickle=False``, so loading
it can run no code and imports neither scikit-learn nor SciPy. ``bottleneck-model.skops`` is the
training artefact (the fitted scikit-learn estimator, for inspection and re-export); it is loaded
only when asked for by path, with an explicit list of trusted types. Pickle is never used.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, feature_schema_hash
from bottleneck_operator.analysis.model.envelope import Envelope
from bottleneck_operator.analysis.model.trees import TreeEnsemble, export_ensemble
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator.errors import ModelError

MODEL_DIR = Path(__file__).resolve().parents[2] / "model"  # the package's shipped model/, beside analysis/
MODEL_FILE = "bottleneck-model.npz"
TRAINING_FILE = "bottleneck-model.skops"
METADATA_FILE = "bottleneck-model.json"
_HEADER = "header"  # the npz entry holding the JSON header (a 0-d unicode array, no pickle)
_LOW, _HIGH = "envelope_low", "envelope_high"

# The scikit-learn types a fitted HistGradientBoostingClassifier is made of, beyond the numpy and
# builtin types skops trusts by default (checked with skops.io.get_untrusted_types on a trained model).
# Anything else in a training file is refused before loading.
TRUSTED_TYPES: tuple[str, ...] = (
    "sklearn._loss.link.Interval",
    "sklearn._loss.link.MultinomialLogit",
    "sklearn._loss.loss.HalfMultinomialLoss",
    "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingClassifier",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.preprocessing._label.LabelEncoder",
)


class BottleneckModel:
    """A fitted classifier over :data:`FEATURE_NAMES` with calibrated probabilities.

    Attributes:
        version: model version, e.g. "0.1.0-s7-3f2a9c01".
        classes: the predicted classes, in the column order of :meth:`predict_proba`.
        temperature: divisor of the raw multiclass scores fitted on held-out data (calibration).
        metadata: training facts (seed, jobs, metrics) carried in the file.
        envelope: per-feature range of the training data, or None.
    """

    def __init__(
        self,
        estimator: Any | None = None,
        *,
        temperature: float,
        version: str,
        feature_names: Sequence[str] = FEATURE_NAMES,
        metadata: Mapping[str, Any] | None = None,
        ensemble: TreeEnsemble | None = None,
        classes: Sequence[str] | None = None,
        envelope: Envelope | None = None,
    ) -> None:
        if tuple(feature_names) != FEATURE_NAMES:
            raise ModelError(
                f"model feature schema does not match the code's ({len(feature_names)} vs "
                f"{len(FEATURE_NAMES)} features): retrain with `bottleneck-operator train`"
            )
        labels = [str(c) for c in (classes if classes is not None else getattr(estimator, "classes_", []))]
        try:
            self.classes: tuple[Bottleneck, ...] = tuple(Bottleneck(c) for c in labels)
        except ValueError as exc:
            raise ModelError(f"model predicts unknown classes {labels}") from exc
        if not self.classes or Bottleneck.UNKNOWN in self.classes:
            raise ModelError(f"model predicts unexpected classes {labels}")
        if ensemble is None:
            if estimator is None:
                raise ModelError("a model needs its trees: an estimator or an ensemble")
            ensemble = export_ensemble(estimator)
        if ensemble.columns != len(self.classes):
            raise ModelError(f"model has {ensemble.columns} score columns for {len(self.classes)} classes")
        # The estimator is kept only where training made it; inference reads the ensemble alone.
        self.estimator = estimator
        self.ensemble = ensemble
        self.temperature = float(temperature)
        if not np.isfinite(self.temperature) or self.temperature <= 0:
            raise ModelError(f"model temperature {temperature!r} is not a positive number")
        if len(set(self.classes)) != len(self.classes):
            raise ModelError(f"model names a class twice: {labels}")
        self.version = version
        self.metadata: dict[str, Any] = dict(metadata or {})
        if envelope is not None:
            _check_envelope(envelope)
        # None for models trained before envelopes were kept: then nothing counts as unfamiliar.
        self.envelope = envelope

    def raw_scores(self, x: FloatArray) -> FloatArray:
        """Uncalibrated multiclass scores (log-odds), shape (rows, classes)."""
        return self.ensemble.decision_function(np.asarray(x, dtype=np.float64).reshape(len(x), -1))

    def predict_proba(self, x: FloatArray) -> FloatArray:
        """Calibrated class probabilities, columns in :attr:`classes` order.

        Args:
            x: feature rows, shape (rows, len(FEATURE_NAMES)); NaN where a feature is missing.

        Returns:
            Array of shape (rows, len(classes)) whose rows sum to 1.
        """
        if len(x) == 0:
            return np.empty((0, len(self.classes)))
        return softmax(self.raw_scores(x) / self.temperature)


def _check_envelope(envelope: Envelope) -> None:
    """Both bounds one number per feature, finite or NaN together (a feature never seen), low <= high."""
    low, high = envelope.low, envelope.high
    if low.shape != (len(FEATURE_NAMES),) or high.shape != low.shape:
        raise ModelError(f"model envelope has shapes {low.shape} and {high.shape}, not ({len(FEATURE_NAMES)},)")
    if np.isinf(low).any() or np.isinf(high).any() or not np.array_equal(np.isnan(low), np.isnan(high)):
        raise ModelError("model envelope holds infinite bounds, or a bound without its pair")
    seen = ~np.isnan(low)
    if np.any(low[seen] > high[seen]):
        raise ModelError("model envelope has a low bound above its high bound")


def softmax(z: FloatArray) -> FloatArray:
    """Row-wise softmax, numerically stable."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def fit_temperature(scores: FloatArray, y: Sequence[int] | FloatArray) -> float:
    """The temperature minimising the negative log-likelihood of held-out labels.

    Args:
        scores: raw multiclass scores on held-out rows.
        y: the true column index of each row.

    Returns:
        Temperature in [0.05, 20] (1 = the estimator's own probabilities).
    """
    labels = np.asarray(y, dtype=np.intp)

    def nll(log_t: float) -> float:
        p = softmax(scores / np.exp(log_t))
        return float(-np.mean(np.log(np.clip(p[np.arange(len(labels)), labels], 1e-12, 1.0))))

    # Golden-section search on log T: the NLL is unimodal in T for a fixed score matrix.
    lo, hi = np.log(0.05), np.log(20.0)
    ratio = (np.sqrt(5.0) - 1) / 2
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = nll(a), nll(b)
    for _ in range(60):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = nll(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = nll(b)
    return float(np.exp((lo + hi) / 2))


def _header(model: BottleneckModel) -> dict[str, Any]:
    return {
        "version": model.version,
        "feature_schema": feature_schema_hash(),
        "feature_names": list(FEATURE_NAMES),
        "classes": [c.value for c in model.classes],
        "temperature": model.temperature,
    }


def save_model(model: BottleneckModel, directory: Path) -> tuple[Path, Path]:
    """Write the runtime model, the training artefact (when there is an estimator) and the metadata.

    Args:
        model: a fitted model.
        directory: destination folder (created when missing).

    Returns:
        (runtime model file, metadata file).
    """
    directory.mkdir(parents=True, exist_ok=True)
    header = _header(model)
    path = directory / MODEL_FILE
    arrays: dict[str, Any] = {_HEADER: np.array(json.dumps(header)), **model.ensemble.arrays()}
    if model.envelope is not None:
        arrays[_LOW], arrays[_HIGH] = model.envelope.low, model.envelope.high
    np.savez_compressed(path, **arrays)
    if model.estimator is not None:
        import skops.io as sio  # present wherever an estimator was fitted (the `train` extra)

        sio.dump({"estimator": model.estimator, **header}, directory / TRAINING_FILE, compression=zipfile.ZIP_DEFLATED)
    meta_path = directory / METADATA_FILE
    meta_path.write_text(json.dumps({**header, **model.metadata}, indent=2, sort_keys=False) + "\n")
    return path, meta_path


def load_model(path: Path | None = None) -> BottleneckModel:
    """Load a model: the runtime ``.npz`` (default: the shipped one) or a ``.skops`` training file.

    Args:
        path: a model file; default the shipped ``bottleneck_operator/model/bottleneck-model.npz``.

    Returns:
        The model.

    Raises:
        ModelError: the file is missing, unreadable, carries untrusted content or another feature schema.
    """
    path = path or MODEL_DIR / MODEL_FILE
    if not path.is_file():
        raise ModelError(f"model file not found: {path} (run `bottleneck-operator train`)")
    estimator: Any = None
    ensemble: TreeEnsemble | None = None
    envelope: Envelope | None = None
    if path.suffix == ".skops":
        header, estimator = _read_training_file(path)
    else:
        header, ensemble, envelope = _read_runtime_file(path)
    if header.get("feature_schema") != feature_schema_hash():
        raise ModelError(
            f"model file {path} was trained on feature schema {header.get('feature_schema')}, "
            f"the code has {feature_schema_hash()}: retrain with `bottleneck-operator train`"
        )
    try:
        return BottleneckModel(
            estimator,
            temperature=float(header.get("temperature", 1.0)),
            version=str(header.get("version", "unknown")),
            feature_names=tuple(header.get("feature_names", ())),
            metadata=_read_metadata(path.with_name(METADATA_FILE)),
            ensemble=ensemble,
            classes=header.get("classes"),
            envelope=envelope,
        )
    except (ModelError, TypeError, ValueError) as exc:
        # The message names the file: the operator refuses to start on it, and says which file to fix.
        raise ModelError(f"model file {path} is refused: {exc}") from exc


def _read_runtime_file(path: Path) -> tuple[dict[str, Any], TreeEnsemble, Envelope | None]:
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data[_HEADER][()]))
            ensemble = TreeEnsemble.from_arrays(
                {name: np.array(data[name]) for name in data.files if name != _HEADER}, features=len(FEATURE_NAMES)
            )
            envelope = (
                Envelope(np.array(data[_LOW], dtype=np.float64), np.array(data[_HIGH], dtype=np.float64))
                if _LOW in data.files and _HIGH in data.files
                else None
            )
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        # numpy refuses object arrays with ValueError: a pickled payload lands here, unrun.
        raise ModelError(f"cannot read model file {path}: {exc}") from exc
    if not isinstance(header, dict):
        raise ModelError(f"model file {path} does not hold a bottleneck model")
    return header, ensemble, envelope


def _read_training_file(path: Path) -> tuple[dict[str, Any], Any]:
    try:
        import skops.io as sio
    except ImportError as exc:
        raise ModelError(
            f"{path} is a training file: reading it needs pip install 'bottleneck-operator[train]'; "
            "the runtime model is the .npz beside it"
        ) from exc

    try:
        untrusted = [t for t in sio.get_untrusted_types(file=path) if t not in TRUSTED_TYPES]
    except Exception as exc:  # skops raises several types on a damaged archive
        raise ModelError(f"cannot read model file {path}: {exc}") from exc
    if untrusted:
        raise ModelError(f"model file {path} carries untrusted types: {', '.join(sorted(untrusted))}")
    try:
        payload = sio.load(path, trusted=list(TRUSTED_TYPES))
    except Exception as exc:
        raise ModelError(f"cannot load model file {path}: {exc}") from exc
    if not isinstance(payload, dict) or "estimator" not in payload:
        raise ModelError(f"model file {path} does not hold a bottleneck model")
    header = {k: v for k, v in payload.items() if k != "estimator"}
    header.setdefault("classes", [str(c) for c in getattr(payload["estimator"], "classes_", [])])
    return header, payload["estimator"]


def _read_metadata(meta_path: Path) -> dict[str, Any]:
    if not meta_path.is_file():
        return {}
    try:
        return dict(json.loads(meta_path.read_text()))
    except (OSError, ValueError):
        return {}


def class_index(classes: Sequence[Bottleneck]) -> dict[Bottleneck, int]:
    """Column of each class in a probability matrix."""
    return {c: i for i, c in enumerate(classes)}


__all__ = [
    "CLASSES",
    "MODEL_FILE",
    "TRAINING_FILE",
    "TRUSTED_TYPES",
    "BottleneckModel",
    "fit_temperature",
    "load_model",
    "save_model",
    "softmax",
]
