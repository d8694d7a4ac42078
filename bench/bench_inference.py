"""Inference cost as a user meets it: `analyze` on one Job from a cold start, and the memory it takes.

Prints the median wall time of ``bottleneck-operator analyze`` (a fresh process each run, against a
real Prometheus holding one simulated Job), the time to load the shipped model, and the resident
memory of a process that has imported the operator's analysis path and loaded the model.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
_START = 1_767_225_600.0  # any fixed past instant: the Job is analysed with an explicit --start/--end

_LOAD = """
import resource, sys, time
t = time.perf_counter()
from bottleneck_operator.analysis.model import load_model
import bottleneck_operator.pipeline
model = load_model()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      int(any(m.startswith(("sklearn", "scipy")) for m in sys.modules)))
"""


def _analyze_wall(url: str, job: object) -> list[float]:
    argv = [
        sys.executable, "-m", "bottleneck_operator", "analyze", "--prometheus-url", url,
        "--namespace", job.namespace, "--job", job.name,  # type: ignore[attr-defined]
        "--start", str(job.start), "--end", str(job.end), "--output", "json",  # type: ignore[attr-defined]
    ]  # fmt: skip
    walls = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        walls.append(time.perf_counter() - t)
    return walls


def main() -> None:
    from bottleneck_operator.simulation import generate_jobs, write_openmetrics
    from bottleneck_operator.simulation.localprom import LocalPrometheus

    job = next(j for j in generate_jobs(11, 5, start=_START) if not j.ambiguous)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "job.om"
        with data.open("w") as out:
            write_openmetrics([job], out)
        with LocalPrometheus.from_openmetrics(data, workdir=Path(tmp) / "prom") as prom:
            walls = _analyze_wall(prom.url, job)
    loads, rss, heavy = [], 0.0, 0
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", _LOAD], check=True, capture_output=True, text=True).stdout.split()
        loads.append(float(out[0]))
        rss, heavy = max(rss, float(out[1])), max(heavy, int(out[2]))
    print(
        f"analyze, one Job, fresh process: median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}, max {max(walls):.2f}, {RUNS} runs)"
    )
    print(
        f"model load with the analysis path imported: median {statistics.median(loads):.2f} s; "
        f"peak RSS {rss:.0f} MB; scikit-learn/SciPy imported: {'yes' if heavy else 'no'}"
    )


if __name__ == "__main__":
    main()
