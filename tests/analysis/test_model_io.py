"""Model persistence with skops: round trip, refusal of untrusted content, schema check, shipped model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio

from bottleneck_operator.analysis.features import FEATURE_NAMES, extract_features, feature_schema_hash
from bottleneck_operator.analysis.model import (
    METADATA_FILE,
    MODEL_DIR,
    MODEL_FILE,
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


def test_refuses_untrusted_types(tmp_path: Path) -> None:
    path = tmp_path / MODEL_FILE
    sio.dump({"estimator": os.system, "feature_schema": feature_schema_hash()}, path)
    with pytest.raises(ModelError, match="untrusted"):
        load_model(path)


def test_refuses_another_feature_schema(tiny_model: BottleneckModel, tmp_path: Path) -> None:
    path = tmp_path / MODEL_FILE
    sio.dump({"estimator": tiny_model.estimator, "feature_schema": "0000000000000000"}, path)
    with pytest.raises(ModelError, match="feature schema"):
        load_model(path)


def test_missing_or_damaged_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not found"):
        load_model(tmp_path / "nope.skops")
    bad = tmp_path / "bad.skops"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ModelError):
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
