"""Inference cost as a user meets it: `analyze` on one Job from a cold start, and the memory it takes.

Prints the median wall time of ``bottleneck-operator analyze`` (a fresh process each run, against a
real Prometheus holding one simulated Job), the time to load the shipped model, and the resident
memory of a process that has imported the operator's analysis path and loaded the model.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
ANALYZE_TARGET_S = 1.0  # median wall of `analyze` on one Job
_START = 1_767_225_600.0  # any fixed past instant: the Job is analysed with an explicit --start/--end

_LOAD = """
import resource, sys, time
t = time.perf_counter()
from bottleneck_operator.analysis.model.classifier import load_model
import bottleneck_operator.pipeline
model = load_model()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      int(any(m.startswith(("sklearn", "scipy")) for m in sys.modules)))
"""


def _analyze_argv(url: str, job: object) -> list[str]:
    return [
        sys.executable, "-m", "bottleneck_operator", "analyze", "--prometheus-url", url,
        "--namespace", job.namespace, "--job", job.name,  # type: ignore[attr-defined]
        "--start", str(job.start), "--end", str(job.end), "--output", "json",  # type: ignore[attr-defined]
    ]  # fmt: skip


def _with_verdict(url: str, jobs: list[object]) -> object:
    """The first Job that ``analyze`` gives a verdict (exit 0): the case the figure is about. A Job
    whose window has too little data exits 3 with an abstention, faster than a verdict."""
    for job in jobs:
        code = subprocess.run(_analyze_argv(url, job), capture_output=True).returncode
        if code == 0:
            return job
        if code != 3:
            raise RuntimeError(f"analyze exited {code} on {job.name}")  # type: ignore[attr-defined]
    raise RuntimeError(f"no verdict for any of {len(jobs)} simulated Jobs")


def _bytecode_env(scratch: Path) -> dict[str, str]:
    """An environment in which ``analyze`` imports the package from compiled bytecode, as an installed
    package does.

    pip compiles a wheel's modules when it installs them; a checkout run with PYTHONDONTWRITEBYTECODE
    (set in the image, and on shared development machines) compiles every module of the package at
    every start instead, ~0.15 s that no installed ``analyze`` spends. A copy of the package is
    compiled in a scratch directory, so nothing is written into the checkout.
    """
    import bottleneck_operator

    site = scratch / "site"
    shutil.copytree(
        Path(bottleneck_operator.__file__).parent,
        site / "bottleneck_operator",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(site)], check=True)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _analyze_wall(url: str, job: object, env: dict[str, str]) -> list[float]:
    walls = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(_analyze_argv(url, job), check=True, capture_output=True, env=env)
        walls.append(time.perf_counter() - t)
    return walls


def main() -> None:
    from bottleneck_operator_dev.simulation import generate_jobs, write_openmetrics
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus

    jobs = [j for j in generate_jobs(11, 8, start=_START) if not j.ambiguous]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "jobs.om"
        with data.open("w") as out:
            write_openmetrics(jobs, out)
        with LocalPrometheus.from_openmetrics(data, workdir=Path(tmp) / "prom") as prom:
            env = _bytecode_env(Path(tmp))
            walls = _analyze_wall(prom.url, _with_verdict(prom.url, jobs), env)  # type: ignore[arg-type]
    loads, rss, heavy = [], 0.0, 0
    for _ in range(3):
        fields = subprocess.run(
            [sys.executable, "-c", _LOAD], check=True, capture_output=True, text=True
        ).stdout.split()
        loads.append(float(fields[0]))
        rss, heavy = max(rss, float(fields[1])), max(heavy, int(fields[2]))
    print(
        f"analyze, one Job, fresh process (package byte-compiled): median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}, max {max(walls):.2f}, {RUNS} runs; target <= {ANALYZE_TARGET_S:.1f} s: "
        f"{'met' if statistics.median(walls) <= ANALYZE_TARGET_S else 'NOT met'})"
    )
    print(
        f"model load with the analysis path imported: median {statistics.median(loads):.2f} s; "
        f"peak RSS {rss:.0f} MB; scikit-learn/SciPy imported: {'yes' if heavy else 'no'}"
    )


if __name__ == "__main__":
    main()
