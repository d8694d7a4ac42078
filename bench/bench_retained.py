"""Scale with retained reports: 1,000 profiled Jobs plus 10,000 reports kept after their Jobs ended.

The operator runs as its own process (``bottleneck-operator run``) against kmock's emulator, the 1,000
running Jobs' telemetry in a real Prometheus (as bench_operator), and 10,000 reports of finished Jobs
in the emulator (each a full final status with a 48-window timeline, from a real analysis; 500 of
them past the retention). The reports are written as an operator from before the lifecycle mirror
left them (no ``bottleneck.dev/lifecycle`` annotation): the first run's sweep reads each whole once
and mirrors it, the second run's sweep lists metadata alone. While it runs, the bench asks the
operator's ``/metrics`` (served on the operator's event loop) every 20 ms: an answer that takes long
is the event loop held up. Figures printed (targets in brackets):

- the longest wait for ``/metrics`` during the retention sweep over the 10,000 reports, first with
  no Job (the sweep alone, mirroring every report), then with the 1,000 Jobs analysed meanwhile (the
  reports mirrored), and over each whole run [event-loop stall <= 100 ms];
- the sweep's own summary (reports, pages, deletions, reports read whole, mirrors written, seconds);
- the operator's own reading of its event loop over each whole run (:mod:`bottleneck_operator.controller.looplag`,
  a heartbeat every 20 ms: the longest lag, and how many heartbeats ran over 100 ms late) [<= 100 ms];
- the operator's peak RSS (VmHWM) [<= 300 MB].

The operator runs on a core of its own (the last one); Prometheus, the emulator (in the bench's
process) and the probe share the others, as on a cluster where the API server and Prometheus run
on other machines: in one process beside the operator's, their work would be read as its stalls
whenever they want the same core. On a machine shared with other work the probe's answer times
also include the probe's own waits for a core, which the operator's heartbeat does not see.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_operator import HISTORY, SCRAPE, _vm_hwm_mb, _write_history
from bench.image_env import image_malloc_env

N_JOBS = 1000
N_RETAINED = 10_000
N_EXPIRED = 500
STALL_TARGET_MS = 100.0
RSS_TARGET_MB = 300.0
INTERVAL = 10.0
_SWEEP = re.compile(
    r"retention sweep: reports=(\d+) pages=(\d+) deleted=(\d+) closed=(\d+) seconds=([\d.]+)"
    r"(?: whole=(\d+) mirrored=(\d+))?"
)


def _template(prom_url: str, job: Any) -> dict[str, Any]:
    """A real final status (one Job analysed by the pipeline), with a full timeline: a retained report's body."""
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.reports import TimelineEntry
    from bottleneck_operator.settings import Settings

    analyzer = Analyzer.from_settings(Settings(prometheus_url=prom_url))
    status = analyzer.analyze_jobs([JobRequest(job.namespace, job.name, job.start, job.end)], phase="Completed")[
        0
    ].status
    window = status.window
    assert window is not None
    entry = TimelineEntry(start=window.start, end=window.end, bottleneck=status.bottleneck or "Unknown", confidence=0.8)
    return status.model_copy(update={"timeline": [entry] * 48}).dump()


def _retained(cluster: Any, template: dict[str, Any], now: float) -> int:
    from bottleneck_operator.controller.reports_api import report_body
    from bottleneck_operator.reports import rfc3339
    from bottleneck_operator_dev.demo.cluster import REPORTS

    size = 0
    for i in range(N_RETAINED):
        ended = now - (40 * 86400 if i < N_EXPIRED else 86400 + 60 * i)
        status = {**template, "window": {**template["window"], "end": rfc3339(ended), "start": rfc3339(ended - 3600)}}
        name = f"done-{i:05d}"
        body = report_body("archive", name, f"uid-{i}")
        del body["metadata"]["annotations"]  # as an operator from before the lifecycle mirror wrote it
        cluster.create(REPORTS, "archive", {**body, "status": status})
        size = size or len(str(status))
    return size


# The probe runs in a process of its own: in the bench's process it would share the interpreter lock
# with the emulator, and the emulator's own work would read as the operator's stalls.
_PROBE = """
import sys, time, urllib.request
url, out = sys.argv[1], open(sys.argv[2], "w", buffering=1)
while True:
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            resp.read()
    except OSError:
        time.sleep(0.05)
        continue
    out.write(f"{time.time()} {time.perf_counter() - t0}\\n")
    time.sleep(0.02)
"""


class _Probe:
    """GET /metrics every 20 ms from a separate process; ``samples()``: (wall time, seconds waited)."""

    def __init__(self, url: str, path: Path) -> None:
        self.path = path
        self.proc = subprocess.Popen([sys.executable, "-c", _PROBE, url, str(path)])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def samples(self) -> list[tuple[float, float]]:
        rows = (line.split() for line in self.path.read_text().splitlines())
        return [(float(t), float(w)) for t, w in rows]


def main() -> None:
    from bench.bench_webhook import _cores

    operator_cores, other_cores = _cores()
    os.sched_setaffinity(0, other_cores)  # the emulator's thread, Prometheus and the probe inherit it
    print(
        f"operator on core(s) {sorted(operator_cores)}; Prometheus, the emulator and the probe on {sorted(other_cores)}"
    )
    _main(operator_cores)


def _main(operator_cores: set[int]) -> None:
    from bottleneck_operator.contract.verdict import CLASSES
    from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body
    from bottleneck_operator_dev.simulation import generate_jobs
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus, free_port

    with tempfile.TemporaryDirectory(prefix="bench-retained-") as tmp:
        workdir = Path(tmp)
        now = time.time()
        jobs = generate_jobs(
            20261122, N_JOBS, start=now - HISTORY, duration=HISTORY, classes=list(CLASSES),
            scrape_interval=SCRAPE, dcgm_fieldset="dev",
        )  # fmt: skip
        _write_history(jobs, workdir / "history.om")
        with LocalPrometheus.from_openmetrics(workdir / "history.om", workdir=workdir / "prom") as prom:
            template = _template(prom.url, jobs[0])
            with LocalCluster() as cluster:
                t = time.perf_counter()
                size = _retained(cluster, template, now)
                print(
                    f"{N_RETAINED:,} retained reports ({size / 1024:.0f} KB of status each) created in {time.perf_counter() - t:.0f} s"
                )
                print(
                    f"-- the sweep alone: the operator with the {N_RETAINED:,} retained reports (no lifecycle "
                    "mirror yet) and no Job"
                )
                _run_operator(cluster, prom.url, workdir, free_port(), jobs=0, cores=operator_cores)
                for j in jobs:
                    cluster.create(JOBS, j.namespace, job_body(j.namespace, j.name, start=j.start))
                print(
                    f"-- the same reports (mirrored by then) and {N_JOBS:,} running profiled Jobs, "
                    f"analysed every {INTERVAL:g} s"
                )
                _run_operator(cluster, prom.url, workdir, free_port(), jobs=N_JOBS, cores=operator_cores)


def _run_operator(cluster: Any, prom_url: str, workdir: Path, port: int, *, jobs: int, cores: set[int]) -> None:
    from bench.bench_webhook import _pinned

    env = {**os.environ, "KUBECONFIG": str(cluster.write_kubeconfig(workdir / "kubeconfig")), **image_malloc_env()}
    cmd = [
        sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", prom_url,
        "--interval", str(INTERVAL), "--metrics-port", str(port), "--liveness", "", "--no-webhook",
    ]  # fmt: skip
    log_path = workdir / "operator.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(_pinned(cmd, cores), env=env, stdout=log, stderr=subprocess.STDOUT)
        probe = _Probe(f"http://127.0.0.1:{port}/metrics", workdir / f"probe-{port}.txt")
        try:
            sweep, seen_at = _wait_for_sweep(proc, log_path, deadline=time.time() + 420)
            if jobs:
                time.sleep(2 * INTERVAL)  # passes over the Jobs go on meanwhile
            peak = _vm_hwm_mb(proc.pid)
            own = _own_lag(port)
        finally:
            probe.stop()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    _report(probe.samples(), sweep, seen_at, peak, jobs)
    longest, beats, late = own
    print(
        f"the operator's own heartbeat over the whole run ({beats:.0f} beats): longest lag {1000 * longest:.0f} ms, "
        f"{late:.0f} over 100 ms (target <= {STALL_TARGET_MS:.0f} ms): {'met' if 1000 * longest <= STALL_TARGET_MS else 'NOT met'}"
    )


def _own_lag(port: int) -> tuple[float, float, float]:
    """The operator's own event-loop lag from its /metrics: (longest seconds, heartbeats, heartbeats over 100 ms)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    longest = beats = within = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "bottleneck_operator_event_loop_lag_max_seconds":
                longest = s.value
            elif s.name == "bottleneck_operator_event_loop_lag_seconds_count":
                beats = s.value
            elif s.name == "bottleneck_operator_event_loop_lag_seconds_bucket" and s.labels.get("le") == "0.1":
                within = s.value
    return longest, beats, beats - within


def _wait_for_sweep(proc: subprocess.Popen, log_path: Path, deadline: float) -> tuple[re.Match[str], float]:  # type: ignore[type-arg]
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the operator exited early: {log_path.read_text()[-3000:]}")
        for m in _SWEEP.finditer(log_path.read_text()):
            if int(m.group(1)) >= N_RETAINED:
                return m, time.time()
        time.sleep(0.2)
    raise SystemExit("no retention sweep over every report was logged in time")


def _report(samples: list[tuple[float, float]], sweep: re.Match[str], seen_at: float, peak: float, jobs: int) -> None:
    reports, pages, deleted, _, seconds, whole, mirrored = sweep.groups()
    began = seen_at - float(seconds) - 0.2
    during = [w for t, w in samples if began <= t <= seen_at]
    waits = sorted(w for _, w in samples)
    longest_sweep = 1000 * max(during, default=float("nan"))
    print(
        f"retention sweep: {reports} reports in {pages} pages, {deleted} deleted, {whole or '?'} read whole, "
        f"{mirrored or '?'} mirrors written, {float(seconds):.1f} s"
    )
    print(
        f"longest event-loop stall during the sweep (/metrics wait, {len(during)} probes): {longest_sweep:.0f} ms "
        f"(target <= {STALL_TARGET_MS:.0f} ms): {'met' if longest_sweep <= STALL_TARGET_MS else 'NOT met'}"
    )
    print(
        f"over the whole run ({len(waits)} probes): longest {1000 * waits[-1]:.0f} ms, "
        f"p99 {1000 * waits[int(0.99 * (len(waits) - 1))]:.0f} ms, median {1000 * waits[len(waits) // 2]:.0f} ms"
    )
    target = f"(target <= {RSS_TARGET_MB:.0f} MB): {'met' if peak <= RSS_TARGET_MB else 'NOT met'}" if jobs else ""
    print(f"operator peak RSS with {jobs:,} Jobs and {N_RETAINED:,} retained reports: {peak:.0f} MB {target}".rstrip())


if __name__ == "__main__":
    main()
