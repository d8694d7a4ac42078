"""`bottleneck-operator run` refuses a spoiled model file at start: one line naming it, exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bottleneck_operator.analysis.model.classifier import MODEL_DIR, MODEL_FILE
from bottleneck_operator.errors import EXIT_USAGE
from bottleneck_operator_dev.demo.cluster import LocalCluster


@pytest.fixture()
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    with LocalCluster() as cluster:
        yield cluster.write_kubeconfig(tmp_path / "kubeconfig")


def test_a_model_with_nan_trees_stops_the_operator_with_exit_2(kubeconfig: Path, tmp_path: Path) -> None:
    with np.load(MODEL_DIR / MODEL_FILE, allow_pickle=False) as data:
        arrays = {name: np.array(data[name]) for name in data.files}
    arrays["value"] = np.full_like(arrays["value"], np.nan)
    spoiled = tmp_path / "nan-trees.npz"
    np.savez(spoiled, **arrays)
    (tmp_path / "bottleneck-model.json").write_text(json.dumps({"note": "beside it, as train writes it"}))
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", "http://127.0.0.1:9",
         "--metrics-port", "0", "--liveness", "", "--no-webhook"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig), "BOTTLENECK_MODEL_PATH": str(spoiled)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == EXIT_USAGE, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("bottleneck-operator run: error:")
    assert str(spoiled) in last and "NaN" in last
    assert "Traceback" not in proc.stderr
