"""Golden digests of the simulator and of the feature matrix, so a refactoring cannot change behaviour unnoticed.

For a few fixed seeds the test regenerates jobs, their windows, their OpenMetrics text and the
feature matrix of those windows, and compares compact digests (rounded sums per signal and per
feature column, labels, classes, a hash of the exposition text without its sample values, and the
rounded sums of those values per metric family) with ``golden.json``. No digest holds a float's last
bits: numpy's vectorised math may differ in the last place between CPUs (an AMD host without AVX-512
wrote other sample values' ``repr`` than the host the file was made on), and such a difference is not
a change of behaviour.

Regenerate the file only after an *intended* simulator or feature change, and say so in the commit:

    PYTHONPATH=operator python tests/simulation/test_golden.py
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, extract_features
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs, write_openmetrics

GOLDEN = Path(__file__).with_name("golden.json")
START = 1_700_000_000.0

# name -> generate_jobs keyword arguments: plain, holdout with near-ties, forced scrape interval and field set.
CASES: dict[str, dict[str, Any]] = {
    "plain-7": {"seed": 7, "n": 5, "start": START, "duration": 600.0},
    "holdout-ambiguous-11": {
        "seed": 11,
        "n": 6,
        "start": START,
        "duration": 900.0,
        "holdout": True,
        "include_ambiguous": True,
    },
    "forced-123": {
        "seed": 123,
        "n": 4,
        "start": START,
        "duration": 1200.0,
        "scrape_interval": 15.0,
        "dcgm_fieldset": "shipped",
    },
}


def _num(x: float) -> float | str:
    """A float to ten significant digits (JSON-safe: NaN and infinities as strings)."""
    if not math.isfinite(x):
        return str(x)
    return float(f"{x:.10g}")


def _sums(arrays: Iterable[np.ndarray]) -> list[Any]:
    """[finite sample count, rounded sum of the finite samples] over the arrays."""
    values = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])
    finite = values[np.isfinite(values)]
    return [int(finite.size), _num(float(finite.sum()))]


def _job_digest(job: SimulatedJob, window: JobWindow) -> dict[str, Any]:
    truth = json.dumps(job.ground_truth(), sort_keys=True, default=str)
    names = sorted({name for pod in window.pods for name in pod.signals})
    return {
        "job": job.name,
        "label": job.label.value,
        "ambiguous": job.ambiguous,
        "margin": _num(job.margin),
        "nodes": [nd.instance for nd in job.nodes],
        "pods": [[p.pod, p.node, p.gpu_count, p.gpu_model, p.ip] for p in job.pods],
        "truth_sha256": hashlib.sha256(truth.encode()).hexdigest(),
        "window": {
            "timestamps": _sums([window.timestamps]),
            "coverage": _num(window.quality.coverage),
            "scrape_interval": window.quality.scrape_interval,
            "families": sorted(f.value for f in window.quality.families),
            "notes": list(window.quality.notes),
            "co_located": [p.co_located_pods for p in window.pods],
            "signals": {name: _sums(p.signals[name] for p in window.pods if name in p.signals) for name in names},
        },
    }


def _exposition_digest(text: str) -> dict[str, Any]:
    """The exposition text's lines, a hash of it with the sample values cut out, and the values' sums per family."""
    shape = hashlib.sha256()
    values: dict[str, list[float]] = {}
    family = ""
    for line in text.splitlines():
        if line.startswith("#"):
            if line.startswith("# TYPE "):
                family = line.split(" ")[2]
            shape.update(line.encode() + b"\n")
            continue
        head, value, stamp = line.rsplit(" ", 2)  # label values may hold spaces; the last two fields never do
        shape.update(f"{head} {stamp}\n".encode())
        values.setdefault(family, []).append(float(value))
    return {
        "lines": text.count("\n"),
        "shape_sha256": shape.hexdigest(),
        "values": {fam: _sums([np.asarray(v)]) for fam, v in sorted(values.items())},
    }


def digest_case(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The digest of one case: every job and window, the OpenMetrics text and the feature matrix."""
    jobs = generate_jobs(**kwargs)
    windows = [job.to_window(step=30.0) for job in jobs]
    text = io.StringIO()
    write_openmetrics(jobs, text)
    matrix = extract_features(windows)
    return {
        "jobs": [_job_digest(job, w) for job, w in zip(jobs, windows, strict=True)],
        "openmetrics": _exposition_digest(text.getvalue()),
        "features": {
            "shape": list(matrix.shape),
            "columns": {name: _sums([matrix[:, i]]) for i, name in enumerate(FEATURE_NAMES)},
        },
    }


def _regenerate() -> None:
    golden = {name: digest_case(kwargs) for name, kwargs in CASES.items()}
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_simulator_and_features_match_golden(case: str) -> None:
    golden = json.loads(GOLDEN.read_text())[case]
    got = json.loads(json.dumps(digest_case(CASES[case]), sort_keys=True))
    assert got["features"]["shape"] == golden["features"]["shape"]
    for i, (g, w) in enumerate(zip(got["jobs"], golden["jobs"], strict=True)):
        for key in w:
            assert g[key] == w[key], f"{case}: job {i} ({w['job']}) differs in {key}"
    assert got["openmetrics"] == golden["openmetrics"], f"{case}: OpenMetrics text differs"
    assert got["features"] == golden["features"], f"{case}: feature matrix differs"


if __name__ == "__main__":
    sys.exit(_regenerate())
