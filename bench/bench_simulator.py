"""Simulator throughput: jobs/s and samples/s of generation + ``to_window`` and of OpenMetrics rendering.

Prints medians over a few runs. A "sample" is one value of one signal at one window timestamp for
``to_window``, and one written OpenMetrics line for rendering.
"""

from __future__ import annotations

import io
import statistics
import time

from bottleneck_operator_dev.simulation import generate_jobs, write_openmetrics

START = 1_700_000_000.0
RUNS = 3


def _median(fn: object) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(RUNS):
        started = time.perf_counter()
        count = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times), count


def main() -> None:
    n_jobs, duration = 100, 900.0

    def windows() -> int:
        jobs = generate_jobs(1, n_jobs, start=START, duration=duration)
        samples = 0
        for job in jobs:
            w = job.to_window(step=30.0)
            samples += sum(len(p.signals) * w.timestamps.size for p in w.pods)
        return samples

    secs, samples = _median(windows)
    print(f"generate + to_window: {n_jobs} jobs x {duration:.0f} s in {secs:.2f} s (median of {RUNS})")
    print(f"  {n_jobs / secs:,.0f} jobs/s, {samples / secs:,.0f} signal samples/s")

    n_om = 20
    jobs = generate_jobs(2, n_om, start=START, duration=duration)
    for job in jobs:
        _ = job.state  # physics once, outside the timing

    def render() -> int:
        buf = io.StringIO()
        write_openmetrics(jobs, buf)
        return buf.getvalue().count("\n")

    secs, lines = _median(render)
    print(f"OpenMetrics rendering: {n_om} jobs x {duration:.0f} s in {secs:.2f} s (median of {RUNS})")
    print(f"  {n_om / secs:,.1f} jobs/s, {lines / secs:,.0f} samples/s ({lines:,} lines)")


if __name__ == "__main__":
    main()
