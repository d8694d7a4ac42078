"""Verdicts side by side per label layout: the same simulated Jobs stored as each real stack stores them.

Every layout of :mod:`bottleneck_operator_dev.simulation.layouts` is backfilled into a Prometheus of its
own and analysed with default settings (``multi-cluster`` with ``selector_matchers=['cluster="a"']``,
the one setting a Thanos/Mimir serving several clusters needs). Prints, per layout, the layout the
operator detected, the agreement of its verdicts with the project layout's, and macro-F1 against the
simulator's ground truth.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bottleneck_operator.analysis.evaluation.metrics import figures
from bottleneck_operator.pipeline import Analyzer, JobRequest
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.simulation import generate_jobs
from bottleneck_operator_dev.simulation.layouts import LAYOUTS, write_layout
from bottleneck_operator_dev.simulation.localprom import LocalPrometheus, binaries_available

SEED = 20261124
JOBS = 24  # enough for every class; each layout is one backfill and one pass
START = 1767225600.0  # fixed: the same blocks on every run
SETTINGS: dict[str, dict[str, Any]] = {"multi-cluster": {"selector_matchers": ['cluster="a"']}}


def _verdicts(jobs: list[Any], layout: str, workdir: Path) -> tuple[list[str], dict[str, str], float]:
    path = workdir / f"{layout}.om"
    with path.open("w") as out:
        write_layout(jobs, out, layout)
    with LocalPrometheus.from_openmetrics(path, workdir=workdir / layout) as prom:
        analyzer = Analyzer.from_settings(Settings(prometheus_url=prom.url, **SETTINGS.get(layout, {})))
        requests = [JobRequest(namespace=j.namespace, job=j.name, start=j.start, end=j.end) for j in jobs]
        started = time.perf_counter()
        results = analyzer.analyze_jobs(requests, phase="Completed")
        seconds = time.perf_counter() - started
    layout_found = next((dict(r.window.quality.layout) for r in results if r.window and r.window.pods), {})
    return [r.verdict.bottleneck.value for r in results], layout_found, seconds


def main() -> None:
    if not binaries_available():
        print("prometheus/promtool not installed: skipped")
        return
    jobs = generate_jobs(SEED, JOBS, start=START, duration=900.0)
    truth = [j.label.value for j in jobs]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-layouts-") as tmp:
        base: list[str] = []
        for layout in LAYOUTS:
            verdicts, found, seconds = _verdicts(jobs, layout, Path(tmp))
            base = base or verdicts
            agree = sum(a == b for a, b in zip(verdicts, base, strict=True)) / len(jobs)
            f1 = figures(truth, verdicts).macro_f1
            detected = ", ".join(f"{k}={v}" for k, v in found.items())
            rows.append((layout, f"{agree:.3f}", f"{f1:.3f}", f"{seconds:.2f}", detected))
    header = ("layout", "agreement", "macro-F1", "analyse s", "detected")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    print(f"{JOBS} jobs; agreement with the project layout's verdicts, macro-F1 against ground truth")
    for r in [header, *rows]:
        print("  ".join(f"{c:<{w}}" for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4])


if __name__ == "__main__":
    main()
