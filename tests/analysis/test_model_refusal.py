"""A damaged or hand-made model file is refused at load, naming the file, as a usage error (exit 2).

Each case starts from the shipped runtime model's own arrays and spoils one thing: a file that
loads must give numbers, so NaN/Inf, wrong shapes and out-of-range indices never reach scoring.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, extract_features
from bottleneck_operator.analysis.model.classifier import MODEL_DIR, MODEL_FILE, load_model
from bottleneck_operator.cli import main
from bottleneck_operator.contract.verdict import CLASSES
from bottleneck_operator.errors import EXIT_USAGE, ModelError

from .synth import make_window

Arrays = dict[str, Any]


def _shipped() -> Arrays:
    with np.load(MODEL_DIR / MODEL_FILE, allow_pickle=False) as data:
        return {name: np.array(data[name]) for name in data.files}


def _header(arrays: Arrays, **changes: Any) -> None:
    header = json.loads(str(arrays["header"][()]))
    arrays["header"] = np.array(json.dumps({**header, **changes}))


def _set(name: str, index: int, value: Any) -> Callable[[Arrays], None]:
    def spoil(arrays: Arrays) -> None:
        arrays[name] = arrays[name].copy()
        arrays[name][index] = value

    return spoil


def _first_split(arrays: Arrays) -> int:
    """A node that is not a leaf (its left child is another node)."""
    return int(np.flatnonzero(arrays["left"] != np.arange(arrays["left"].size))[0])


SPOILED: dict[str, Callable[[Arrays], None]] = {
    "all-NaN leaves": lambda a: a.update(value=np.full_like(a["value"], np.nan)),
    "an infinite leaf": _set("value", -1, np.inf),
    "a NaN baseline": _set("baseline", 0, np.nan),
    "a NaN threshold": lambda a: _set("threshold", _first_split(a), np.nan)(a),
    "a child index out of range": lambda a: _set("left", _first_split(a), a["left"].size)(a),
    "a negative child index": lambda a: _set("right", _first_split(a), -1)(a),
    "a root out of range": _set("roots", 0, 10**6),
    "a feature index out of range": lambda a: _set("feature", _first_split(a), len(FEATURE_NAMES))(a),
    "a class index out of range": _set("tree_column", 0, len(CLASSES)),
    "a 2-D array": lambda a: a.update(feature=a["feature"].reshape(2, -1)),
    "arrays of different lengths": lambda a: a.update(value=a["value"][:-1]),
    "float indices": lambda a: a.update(left=a["left"].astype(np.float64)),
    "indices beyond 32 bits": lambda a: a.update(roots=a["roots"].astype(np.int64) + 2**40),
    "text where numbers go": lambda a: a.update(value=a["value"].astype(str)),
    "one class column too many": lambda a: a.update(baseline=np.append(a["baseline"], 0.0)),
    "a NaN temperature": lambda a: _header(a, temperature=float("nan")),
    "a negative temperature": lambda a: _header(a, temperature=-1.0),
    "a temperature that is no number": lambda a: _header(a, temperature=[1]),
    "a class named twice": lambda a: _header(a, classes=["IO", "IO", "CPU", "GPU", "Memory"]),
    "an unknown class": lambda a: _header(a, classes=["IO", "CPU", "Interconnect", "GPU", "Disk"]),
    "an envelope of another shape": lambda a: a.update(envelope_low=a["envelope_low"][:-1]),
    "an infinite envelope bound": _set("envelope_high", 0, np.inf),
    "an envelope low above its high": lambda a: _set("envelope_low", 0, a["envelope_high"][0] + 1)(a),
    "an object array": lambda a: a.update(value=np.array([os.system], dtype=object)),
}


@pytest.mark.parametrize("case", list(SPOILED))
def test_a_spoiled_model_file_is_refused_naming_it(tmp_path: Path, case: str) -> None:
    arrays = _shipped()
    SPOILED[case](arrays)
    path = tmp_path / "spoiled.npz"
    np.savez(path, **arrays)
    with pytest.raises(ModelError) as refused:
        load_model(path)
    assert str(path) in str(refused.value)
    assert refused.value.exit_code == EXIT_USAGE


def test_the_unspoiled_arrays_load_and_score(tmp_path: Path) -> None:
    # The same round trip as above without the damage: what is refused is the damage, not the copy.
    path = tmp_path / "copy.npz"
    np.savez(path, **_shipped())
    proba = load_model(path).predict_proba(extract_features([make_window(c, seed=1) for c in CLASSES]))
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)


def test_the_cli_exits_2_with_one_line_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arrays = _shipped()
    SPOILED["all-NaN leaves"](arrays)
    path = tmp_path / "nan-trees.npz"
    np.savez(path, **arrays)
    # `evaluate` loads the model before it needs any Prometheus.
    code = main(["evaluate", "--model", str(path), "--jobs", "10", "--workdir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert len(err) == 1 and str(path) in err[0] and "NaN" in err[0]
