"""Model persistence: the runtime npz and the skops training file, refusal of untrusted content, schema check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio

from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, extract_features, feature_schema_hash
from bottleneck_operator.analysis.model.classifier import (
    METADATA_FILE,
    MODEL_DIR,
    MODEL_FILE,
    TRAINING_FILE,
    BottleneckModel,
    fit_temperature,
    load_model,
    save_model,
    softmax,
)
from bottleneck_operator.contract.verdict import CLASSES
from bottleneck_operator.errors import ModelError

from .synth import make_window


def test_round_trip_gives_the_same_probabilities(tiny_model: BottleneckModel, tmp_path: Path) -> None:
    model_path, meta_path = save_model(tiny_model, tmp_path)
    loaded = load_model(model_path)
    x = extract_features([make_window(c, seed=7) for c in CLASSES])
    np.testing.assert_allclose(loaded.predict_proba(x), tiny_model.predict_proba(x))
    assert loaded.version == "test-tiny"
    meta = json.loads(meta_path.read_text())
    assert meta["feature_names"] == list(FEATURE_NAMES)
    assert meta["feature_schema"] == feature_schema_hash()
    assert loaded.estimator is None  # the runtime file carries trees, not a scikit-learn object
    trained = load_model(tmp_path / TRAINING_FILE)
    np.testing.assert_allclose(trained.predict_proba(x), tiny_model.predict_proba(x))
    np.testing.assert_allclose(trained.raw_scores(x), tiny_model.estimator.decision_function(x), atol=1e-9)


def test_runtime_file_with_pickled_content_is_refused_unrun(tmp_path: Path) -> None:
    path = tmp_path / MODEL_FILE
    np.savez(path, header=np.array([os.system], dtype=object))
    with pytest.raises(ModelError, match="cannot read"):
        load_model(path)


def test_runtime_file_of_another_schema_is_refused(tiny_model: BottleneckModel, tmp_path: Path) -> None:
    path, _ = save_model(tiny_model, tmp_path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: np.array(data[name]) for name in data.files}
    header = json.loads(str(arrays["header"][()]))
    arrays["header"] = np.array(json.dumps({**header, "feature_schema": "0000000000000000"}))
    np.savez(path, **arrays)
    with pytest.raises(ModelError, match="feature schema"):
        load_model(path)


def test_refuses_untrusted_types(tmp_path: Path) -> None:
    path = tmp_path / TRAINING_FILE
    sio.dump({"estimator": os.system, "feature_schema": feature_schema_hash()}, path)
    with pytest.raises(ModelError, match="untrusted"):
        load_model(path)


def test_refuses_another_feature_schema(tiny_model: BottleneckModel, tmp_path: Path) -> None:
    path = tmp_path / TRAINING_FILE
    sio.dump({"estimator": tiny_model.estimator, "feature_schema": "0000000000000000"}, path)
    with pytest.raises(ModelError, match="feature schema"):
        load_model(path)


def test_missing_or_damaged_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not found"):
        load_model(tmp_path / "nope.npz")
    for name in ("bad.skops", "bad.npz"):
        bad = tmp_path / name
        bad.write_bytes(b"not a zip")
        with pytest.raises(ModelError, match="cannot read"):
            load_model(bad)


def test_temperature_fit_recovers_a_known_temperature() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, size=(4000, 5))
    # labels drawn from softmax(logits / 2): the right temperature is 2
    p = softmax(logits / 2.0)
    y = np.array([rng.choice(5, p=row) for row in p])
    assert abs(fit_temperature(logits, y) - 2.0) < 0.25


def test_shipped_model_matches_the_feature_schema() -> None:
    path = MODEL_DIR / MODEL_FILE
    if not path.is_file():
        pytest.fail(f"the shipped model is missing: {path} (run `make train`)")
    model = load_model()
    meta = json.loads((MODEL_DIR / METADATA_FILE).read_text())
    assert meta["feature_names"] == list(FEATURE_NAMES)
    assert meta["feature_schema"] == feature_schema_hash()
    assert set(model.classes) == set(CLASSES)
    assert path.stat().st_size < 5_000_000
    assert (MODEL_DIR / "MODEL_CARD.md").read_text().count(model.version) >= 1
    proba = model.predict_proba(extract_features([make_window(CLASSES[0])]))
    assert proba.shape == (1, len(CLASSES)) and abs(proba.sum() - 1) < 1e-9


def test_shipped_runtime_model_gives_the_training_files_scores() -> None:
    runtime, trained = load_model(), load_model(MODEL_DIR / TRAINING_FILE)
    assert runtime.version == trained.version and runtime.classes == trained.classes
    rng = np.random.default_rng(3)
    x = extract_features([make_window(c, seed=s) for c in CLASSES for s in range(3)])
    noisy = x * rng.uniform(0.5, 2.0, size=x.shape)
    noisy[rng.random(x.shape) < 0.2] = np.nan
    for rows in (x, noisy):
        np.testing.assert_allclose(runtime.raw_scores(rows), trained.estimator.decision_function(rows), atol=1e-9)
    assert runtime.temperature == trained.temperature


def test_loading_the_runtime_model_imports_no_scikit_learn() -> None:
    code = (
        "import sys; from bottleneck_operator.analysis.model.classifier import load_model; load_model(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'scipy', 'skops'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
