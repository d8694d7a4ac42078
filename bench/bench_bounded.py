"""Bounded final analysis: a 4-day, 16-pod Job analysed in a fixed memory budget.

The Job's telemetry (simulated: two 8-pod runs of the simulator joined into one 16-pod Job, 4 days at a
60 s scrape) is backfilled into a real Prometheus; ``bottleneck-operator analyze`` then reads the whole
run in its own process, exactly as the operator's final analysis reads it (the same
``pipeline.Analyzer``, the same bounded step). Figures printed (target in brackets):

- peak RSS of the process analysing the whole 4-day run [<= 200 MB];
- the same for a 2-hour part of the run, and the ratio: a long run costs what a short one does;
- the step the 4-day window was read at, and the points per series that gives.

- the same 4 days read at the fixed 30 s step, as the final analysis did before, for comparison.

The peak RSS is each child's own high-water mark (``VmHWM``), under the image's allocator settings.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_operator import _write_history
from bench.image_env import image_malloc_env

DAYS = 4.0
SCRAPE = 60.0
RSS_TARGET_MB = 200.0


def _sixteen_pod_job(start: float) -> list:  # type: ignore[type-arg]
    """Two 8-pod simulated runs, the second renamed into the first: one Job of 16 pods on 16 nodes."""
    from bottleneck_operator_dev.simulation import generate_jobs

    jobs = generate_jobs(7, 30, start=start, duration=DAYS * 86400, scrape_interval=SCRAPE, dcgm_fieldset="dev")
    first, second = [j for j in jobs if len(j.pods) == 8][:2]
    pods = tuple(
        dataclasses.replace(p, pod=f"{first.name}-{8 + i}-{p.pod.rsplit('-', 1)[1]}") for i, p in enumerate(second.pods)
    )
    joined = dataclasses.replace(second, name=first.name, uid=first.uid, label=first.label, pods=pods)
    return [first, joined]


# Runs in the child: the peak is read from the child's own /proc/self/status (VmHWM), which counts
# only what it used after exec (ru_maxrss would also count the bench's own memory it forked from).
_CHILD = """
import atexit, json, sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(sys.argv[1], "w").write(line.split()[1])
atexit.register(peak)
if sys.argv[2] == "analyze":
    from bottleneck_operator.cli import main
    raise SystemExit(main(sys.argv[2:]))
# "fixed": the whole window at the base step, as the final analysis read it before the step was bounded
from bottleneck_operator.pipeline import Analyzer, JobRequest
from bottleneck_operator.settings import Settings
url, job, start, end = sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
analyzer = Analyzer.from_settings(Settings(prometheus_url=url))
result = analyzer.analyze_jobs([JobRequest("ml", job, start, end)], phase="Completed", step=30.0)[0]
print(result.status.model_dump_json(by_alias=True, exclude_none=True))
"""


def _child(args: list[str], env: dict[str, str], workdir: Path) -> tuple[float, float, dict]:  # type: ignore[type-arg]
    """(peak RSS in MB, seconds, the printed status) of one child process running ``_CHILD``."""
    out_path, err_path, peak_path = workdir / "child.json", workdir / "child.err", workdir / "child.peak"
    started = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        code = subprocess.run(
            [sys.executable, "-c", _CHILD, str(peak_path), *args], env=env, stdout=out, stderr=err
        ).returncode
    seconds = time.perf_counter() - started
    if code not in (0, 3):
        raise SystemExit(f"the analysis exited {code}: {err_path.read_text()[-2000:]}")
    return int(peak_path.read_text()) / 1024, seconds, json.loads(out_path.read_text())


def _analyze(
    url: str, job: str, window: tuple[float, float], env: dict[str, str], workdir: Path
) -> tuple[float, float, dict]:  # type: ignore[type-arg]
    """``bottleneck-operator analyze`` of the window, in its own process."""
    args = ["analyze", "--prometheus-url", url, "-n", "ml", "--job", job, "--start", str(window[0]), "--end", str(window[1]), "-o", "json"]  # fmt: skip
    return _child(args, env, workdir)


def main() -> None:
    from bottleneck_operator.telemetry.plan.grid import SERIES_POINTS, bounded_step
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus

    with tempfile.TemporaryDirectory(prefix="bench-bounded-") as tmp:
        workdir = Path(tmp)
        end = time.time() - 600
        start = end - DAYS * 86400
        t = time.perf_counter()
        parts = _sixteen_pod_job(start)
        samples = _write_history(parts, workdir / "history.om")
        name = parts[0].name
        print(
            f"telemetry: one 16-pod Job over {DAYS:g} days, {samples:,} samples written in {time.perf_counter() - t:.1f} s"
        )
        t = time.perf_counter()
        with LocalPrometheus.from_openmetrics(workdir / "history.om", workdir=workdir / "prom") as prom:
            print(f"backfill + Prometheus start: {time.perf_counter() - t:.1f} s")
            env = {**os.environ, **image_malloc_env()}
            run_start, run_end = min(p.start for p in parts), max(p.end for p in parts)
            short_start = run_end - 7200
            short_rss, short_s, short = _analyze(prom.url, name, (short_start, run_end), env, workdir)
            long_rss, long_s, full = _analyze(prom.url, name, (run_start, run_end), env, workdir)
            fixed = ["fixed", prom.url, name, str(run_start), str(run_end)]
            fixed_rss, fixed_s, _ = _child(fixed, env, workdir)
        step = bounded_step(run_start, run_end, 30.0)
        print(
            f"whole run ({(run_end - run_start) / 86400:.1f} days, {full['dataQuality']['pods']} pods): "
            f"read at a {step:g} s step ({(run_end - run_start) / step:.0f} points per series, cap {SERIES_POINTS}); "
            f"verdict {full.get('bottleneck')}, {long_s:.1f} s"
        )
        print(f"last 2 hours ({short['dataQuality']['pods']} pods): verdict {short.get('bottleneck')}, {short_s:.1f} s")
        print(
            f"peak RSS, 4-day 16-pod analysis: {long_rss:.0f} MB (target <= {RSS_TARGET_MB:.0f} MB): "
            f"{'met' if long_rss <= RSS_TARGET_MB else 'NOT met'}"
        )
        print(
            f"peak RSS, 2-hour window of the same Job: {short_rss:.0f} MB; ratio 4 days / 2 hours: {long_rss / short_rss:.2f}"
        )
        print(
            f"peak RSS, the same 4 days read at the fixed 30 s step (before): {fixed_rss:.0f} MB, {fixed_s:.1f} s; "
            f"ratio bounded / fixed: {long_rss / fixed_rss:.2f}"
        )


if __name__ == "__main__":
    main()
