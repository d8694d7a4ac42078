"""The whole loop on one machine: emulated API server, real Prometheus, live simulated jobs, the operator.

1. Simulated training Jobs of every class that started ~15-20 minutes ago: their history up to now
   is backfilled into a real Prometheus (promtool), and their exporters are served live (dcgm,
   node, cAdvisor, kube-state-metrics, the sidecar) and scraped, so data keeps coming.
2. kmock's Kubernetes emulator holds the Jobs; the operator (kopf, in-process) watches them.
3. Some Jobs complete during the demo (their Job status is set Complete at their end), so their
   reports are finalised; the rest keep running.
4. At the end the reports are printed as ``kubectl get bnr -A -o wide`` would, then everything stops.
"""

from __future__ import annotations

import io
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from bottleneck_operator.demo.cluster import JOBS, REPORTS, LocalCluster, job_body, job_status
from bottleneck_operator.demo.table import format_details, format_table
from bottleneck_operator.demo.threads import BackgroundLoop, OperatorThread
from bottleneck_operator.settings import Settings

log = logging.getLogger("bottleneck_operator.demo")

SCRAPE = 15.0  # seconds: the simulated exporters' and the local Prometheus's scrape interval
# Live series and backfilled ones of the same pod carry different instance labels; a short lookback
# keeps the backfilled tail from overlapping the live head for long (3 scrapes, as is customary).
LOOKBACK = "45s"
# Scrape job names as a kube-prometheus-stack install names them.
SCRAPE_JOBS = {
    "dcgm": "dcgm-exporter",
    "cadvisor": "kubelet",
    "ksm": "kube-state-metrics",
    "sidecar": "bottleneck-collector",
}


@dataclass
class DemoOptions:
    """What the demo does.

    Attributes:
        duration: seconds the demo watches the operator work before printing the reports.
        jobs_per_group: simulated Jobs per group (two groups: ending during the demo / running on).
        interval: the operator's analysis interval, seconds.
        seed: the simulator's seed.
        workdir: where Prometheus keeps its data (default: a temporary directory).
    """

    duration: float = 90.0
    jobs_per_group: int = 5
    interval: float = 10.0
    seed: int = 7
    workdir: Path | None = None


class _HistoryOnly(io.TextIOBase):
    """A text sink that keeps OpenMetrics samples up to ``cutoff`` (the live exporters do the rest)."""

    def __init__(self, out: TextIO, cutoff: float) -> None:
        self._out, self._cutoff, self._partial = out, cutoff, ""

    def write(self, s: str) -> int:
        text = self._partial + s
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            if not line.startswith("#"):
                parts = line.rsplit(" ", 2)
                try:
                    if len(parts) == 3 and float(parts[2]) > self._cutoff:
                        continue
                except ValueError:
                    pass
            self._out.write(line + "\n")
        return len(s)

    def flush(self) -> None:
        if self._partial:
            self._out.write(self._partial)
            self._partial = ""
        self._out.flush()


def _jobs(options: DemoOptions, now: float) -> tuple[list[Any], list[Any]]:
    from bottleneck_operator.contract.verdict import CLASSES
    from bottleneck_operator.simulation import generate_jobs

    ago = 17 * 60.0
    # Both groups' telemetry runs on past the demo; the first group's Jobs are marked Complete
    # during it (see _drive), so their reports are finalised over start -> completion.
    ending = generate_jobs(
        options.seed,
        options.jobs_per_group,
        start=now - ago,
        duration=ago + 3600.0,
        classes=list(CLASSES),
        scrape_interval=SCRAPE,
        namespace="ml",
    )
    running = generate_jobs(
        options.seed + 1,
        options.jobs_per_group,
        start=now - ago + 120.0,
        duration=3600.0,
        classes=list(CLASSES),
        scrape_interval=SCRAPE,
        namespace="research",
    )
    return ending, running


def _targets(urls: dict[str, str]) -> dict[str, list[str]]:
    targets: dict[str, list[str]] = {}
    for endpoint, url in urls.items():
        name = SCRAPE_JOBS.get(endpoint, "node-exporter" if endpoint.startswith("node-") else endpoint)
        targets.setdefault(name, []).append(f"{url}/metrics")
    return targets


def run_demo(options: DemoOptions, *, out: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run the demo; prints progress and the final table through ``out``.

    Args:
        options: what to run.
        out: where the lines go (``print`` by default).

    Returns:
        The reports at the end (as the API returns them).
    """
    from bottleneck_operator.simulation import write_openmetrics
    from bottleneck_operator.simulation.live import LiveExporters

    tmp = None
    workdir = options.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="bottleneck-demo-")
        workdir = Path(tmp.name)
    now = time.time()
    ending, running = _jobs(options, now)
    jobs = [*ending, *running]
    out(
        f"simulated {len(jobs)} training Jobs ({', '.join(sorted({j.label.value for j in jobs}))}), started ~17 min ago"
    )

    history = workdir / "history.om"
    with history.open("w") as f:
        sink = _HistoryOnly(f, now)
        write_openmetrics(jobs, sink)  # type: ignore[arg-type]
        sink.flush()
    exporters_loop = BackgroundLoop("live-exporters")
    exporters = LiveExporters(jobs)
    try:
        urls = exporters_loop.run(exporters.start())
        out(f"serving {len(urls)} live exporter endpoints; backfilling history into a local Prometheus")
        reports = _run_cluster(options, workdir, history, urls, jobs, ending, out)
    finally:
        exporters_loop.run(exporters.stop())
        exporters_loop.close()
        if tmp is not None:
            tmp.cleanup()
    out("")
    out("$ kubectl get bnr -A -o wide")
    out(format_table(reports, wide=True))
    out("")
    out(
        format_details(
            reports,
            truth={f"{j.namespace}/{j.name}": j.label.value for j in jobs},
            mechanisms={f"{j.namespace}/{j.name}": j.mechanism.value if j.mechanism else None for j in jobs},
        )
    )
    return reports


def _run_cluster(
    options: DemoOptions,
    workdir: Path,
    history: Path,
    urls: dict[str, str],
    jobs: Sequence[Any],
    ending: Sequence[Any],
    out: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Prometheus, the API emulator and the operator around the live exporters; the final reports."""
    from bottleneck_operator.simulation.localprom import LocalPrometheus

    operator: OperatorThread | None = None
    prom: LocalPrometheus | None = None
    cluster = LocalCluster()
    try:
        prom = LocalPrometheus.from_openmetrics(
            history,
            workdir=workdir / "prometheus",
            scrape_targets=_targets(urls),
            scrape_interval=SCRAPE,
            lookback_delta=LOOKBACK,
        )
        cluster.start()
        out(f"Prometheus at {prom.url}; Kubernetes API emulator at {cluster.url}")
        for j in jobs:
            cluster.create(JOBS, j.namespace, job_body(j.namespace, j.name, start=j.start))
        values: dict[str, Any] = {
            "prometheus_url": prom.url,
            "window": 900.0,
            "metrics_port": 0,
            "liveness_endpoint": "",
            "webhook_enabled": False,
        }
        settings = Settings(**values)
        settings.interval = options.interval  # the demo may go faster than a cluster would
        operator = OperatorThread(settings, server=cluster.url).start()
        out(f"operator running (analysis every {options.interval:g} s); watching for {options.duration:g} s")
        _drive(cluster, ending, options.duration, out)
        _await_final(cluster, ending, timeout=max(30.0, 3 * options.interval))
        return cluster.list(REPORTS)
    finally:
        if operator is not None:
            operator.stop()
        cluster.stop()
        if prom is not None:
            prom.stop()


def _drive(cluster: LocalCluster, ending: Sequence[Any], duration: float, out: Callable[[str], None]) -> None:
    """Mark the first group's Jobs Complete one by one (30-70 % into the demo); report progress."""
    t0 = time.monotonic()
    n = max(1, len(ending))
    pending = [(duration * (0.3 + 0.4 * i / n), j) for i, j in enumerate(ending)]
    last_note = -15.0
    while (elapsed := time.monotonic() - t0) < duration:
        while pending and pending[0][0] <= elapsed:
            _, j = pending.pop(0)
            patch = {"status": job_status(start=j.start, end=time.time())}
            cluster.patch(JOBS, j.namespace, j.name, patch, sub="status")
            out(f"[{elapsed:5.1f}s] Job {j.namespace}/{j.name} completed")
        if elapsed - last_note >= 15.0:
            last_note = elapsed
            reports = cluster.list(REPORTS)
            verdicts = sum(1 for r in reports if (r.get("status") or {}).get("bottleneck") not in (None, "Unknown"))
            out(f"[{elapsed:5.1f}s] {len(reports)} reports, {verdicts} with a verdict")
        time.sleep(0.5)


def _await_final(cluster: LocalCluster, ending: Sequence[Any], timeout: float) -> None:
    names = {(j.namespace, j.name) for j in ending}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = {
            (r["metadata"]["namespace"], r["metadata"]["name"])
            for r in cluster.list(REPORTS)
            if (r.get("status") or {}).get("phase") in ("Completed", "Failed")
        }
        if names <= done:
            return
        time.sleep(0.5)
    log.warning("some reports were not finalised within %.0f s", timeout)
