"""The whole loop on one machine: emulated API server, real Prometheus, live simulated Jobs, the operator.

1. Six simulated training Jobs started ~10 minutes ago: one per class, and one whose dataset gets
   cached during the demo, so it turns from IO-bound to GPU-bound (see :mod:`.story`). Their history
   up to now is backfilled into a real Prometheus (promtool); their exporters are served live (dcgm,
   node, cAdvisor, kube-state-metrics, the sidecar) and scraped, so data keeps coming.
2. kmock's Kubernetes emulator holds the Jobs; the operator (kopf, in-process) watches them and
   analyses a short sliding window often, so that the change shows in a report's timeline.
3. Two Jobs complete during the demo, so their reports are finalised; the rest keep running.
4. It ends with the reports as ``kubectl get bnr -A`` shows them, the changing Job's report in full,
   an HTML report of it, and the commands to try next; everything it started is stopped.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from bottleneck_operator.analysis.model.classifier import load_model
from bottleneck_operator.reports import read_report
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body
from bottleneck_operator_dev.demo.progress import Progress
from bottleneck_operator_dev.demo.report import format_report, next_steps
from bottleneck_operator_dev.demo.story import DemoJob, changing_job, class_jobs, read_surely
from bottleneck_operator_dev.demo.table import CHANGE, format_details, format_table
from bottleneck_operator_dev.demo.threads import BackgroundLoop, OperatorThread
from bottleneck_operator_dev.demo.watch import watch

log = logging.getLogger("bottleneck_operator_dev.demo")

# Seconds between scrapes of the simulated exporters: the short end of what clusters use (and of what the
# model was trained on), so that the demo's one-minute windows hold the twelve readings a verdict needs.
SCRAPE = 5.0
# Live series and backfilled ones of the same pod carry different instance labels; a short lookback
# keeps the backfilled tail from overlapping the live head for long (3 scrapes, as is customary).
LOOKBACK = "15s"
HISTORY = 600.0  # seconds the Jobs ran before the demo started
# Scrape job names as a kube-prometheus-stack install names them.
SCRAPE_JOBS = {
    "dcgm": "dcgm-exporter",
    "cadvisor": "kubelet",
    "ksm": "kube-state-metrics",
    "sidecar": "bottleneck-collector",
}
# Seconds of signals the HTML report plots: the watch and a little before it, so the change and the
# timeline's windows are wide enough to see.
HTML_SPAN = 180.0
# The classes whose Jobs complete during the demo, and when (seconds into the watch).
COMPLETING = {"CPU": 10.0, "Memory": 20.0}


@dataclass
class DemoOptions:
    """What the demo does.

    Attributes:
        duration: the most seconds it watches the operator (it stops sooner once the story is told).
        interval: the operator's analysis interval, seconds.
        window: the sliding window analysed for a running Job, seconds.
        switch_after: seconds into the watch at which the changing Job's dataset is cached.
        seed: the simulator's seed.
        workdir: where Prometheus keeps its data (default: a temporary directory).
        html: where the HTML report goes (default: ``<temp dir>/bottleneck-demo/<job>.html``).
        live: redraw a progress table in place (default: when the output is a terminal).
    """

    duration: float = 80.0
    interval: float = 5.0
    window: float = 60.0
    switch_after: float = 5.0
    seed: int = 7
    workdir: Path | None = None
    html: Path | None = None
    live: bool | None = None


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


def demo_jobs(options: DemoOptions, now: float) -> list[DemoJob]:
    """The six Jobs: one per class, then the one that changes class."""
    # The telemetry runs a little past the longest watch; the backfill writes only up to now.
    start, end = now - HISTORY, now + options.duration + 180.0
    # The windows read to choose them: the watch's, and the second half of the history before it,
    # a minute apart (the final report of a completed Job reads its whole run).
    ends = [now + t for t in range(-int(HISTORY) // 2, int(options.duration) + 1, 60)]
    model = load_model()  # the shipped model, as the operator loads it with the demo's settings
    surely = read_surely(model, ends=ends, window=options.window, step=SCRAPE, min_window=_min_window(options))
    jobs = class_jobs(options.seed, namespace="ml", start=start, end=end, scrape=SCRAPE, sureness=surely)
    jobs = [DemoJob(j.records, j.classes, COMPLETING.get(j.truth)) for j in jobs]
    jobs.append(changing_job(options.seed, namespace="ml", start=start, end=end, scrape=SCRAPE))
    return jobs


def _targets(urls: dict[str, str]) -> dict[str, list[str]]:
    targets: dict[str, list[str]] = {}
    for endpoint, url in urls.items():
        name = SCRAPE_JOBS.get(endpoint, "node-exporter" if endpoint.startswith("node-") else endpoint)
        targets.setdefault(name, []).append(f"{url}/metrics")
    return targets


def run_demo(options: DemoOptions, *, stream: TextIO = sys.stdout) -> list[dict[str, Any]]:
    """Run the demo; prints progress, the reports and what to try next to ``stream``.

    Args:
        options: what to run.
        stream: where the output goes.

    Returns:
        The reports at the end (as the API returns them).
    """
    from bottleneck_operator_dev.simulation import write_openmetrics
    from bottleneck_operator_dev.simulation.live import LiveExporters

    began = time.monotonic()
    tmp = None
    workdir = options.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="bottleneck-demo-")
        workdir = Path(tmp.name)
    now = time.time()
    jobs = demo_jobs(options, now)
    records = [r for j in jobs for r in j.records]
    say = _printer(stream)
    say(
        f"{len(jobs)} simulated training Jobs, started {HISTORY / 60:.0f} min ago: one per class, and "
        f"{jobs[-1].key}, whose dataset gets cached {options.switch_after:.0f} s into the watch "
        f"({jobs[-1].classes[0]} → {jobs[-1].classes[-1]})"
    )
    history = workdir / "history.om"
    with history.open("w") as f:
        sink = _HistoryOnly(f, now)
        write_openmetrics([j.history for j in jobs], sink)  # type: ignore[arg-type]
        sink.flush()
    exporters_loop = BackgroundLoop("live-exporters")
    exporters = LiveExporters(records)
    try:
        urls = exporters_loop.run(exporters.start())
        say(f"serving {len(urls)} live exporter endpoints; backfilling the history into a local Prometheus")
        reports, html = _run_cluster(options, workdir, history, urls, jobs, stream)
    finally:
        exporters_loop.run(exporters.stop())
        exporters_loop.close()
        if tmp is not None:
            tmp.cleanup()
    _summary(stream, reports, jobs, html)
    say(f"\n(the demo took {time.monotonic() - began:.0f} s; everything it started has stopped)")
    return reports


def _printer(stream: TextIO) -> Any:
    def say(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    return say


def _summary(stream: TextIO, reports: list[dict[str, Any]], jobs: list[DemoJob], html: Path | None) -> None:
    """The table, the match count, the changing Job's report in full, the HTML path and what to try next."""
    truth = {j.key: CHANGE.join(j.classes) for j in jobs}
    # The mechanism the last record built in (the changing Job's final class is its last record's).
    mechanisms = {j.key: (m.value if (m := j.records[-1].mechanism) else None) for j in jobs}
    changing = next(j for j in jobs if j.changes)
    typed = [read_report(r) for r in reports]
    full = [r for r in typed if r.key == changing.key]
    parts = [
        "",
        "$ kubectl get bnr -A -o wide",
        format_table(typed, wide=True),
        "",
        format_details(typed, truth=truth, mechanisms=mechanisms),
    ]
    if full:
        ns, name = changing.key.split("/")
        parts += [
            "",
            f"$ kubectl get bnr {name} -n {ns}   # in full: the Job that changed class",
            format_report(full[0]),
        ]
    parts += ["", next_steps(str(html) if html else None)]
    stream.write("\n".join(parts) + "\n")
    stream.flush()


def _run_cluster(
    options: DemoOptions, workdir: Path, history: Path, urls: dict[str, str], jobs: list[DemoJob], stream: TextIO
) -> tuple[list[dict[str, Any]], Path | None]:
    """Prometheus, the API emulator and the operator around the live exporters; the final reports."""
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus

    operator: OperatorThread | None = None
    prom: LocalPrometheus | None = None
    cluster = LocalCluster()
    say = _printer(stream)
    try:
        prom = LocalPrometheus.from_openmetrics(
            history,
            workdir=workdir / "prometheus",
            scrape_targets=_targets(urls),
            scrape_interval=SCRAPE,
            lookback_delta=LOOKBACK,
        )
        cluster.start()
        say(f"Prometheus at {prom.url}; Kubernetes API emulator at {cluster.url}")
        for j in jobs:
            cluster.create(JOBS, j.first.namespace, job_body(j.first.namespace, j.first.name, start=j.first.start))
        settings = demo_settings(options, prom.url)
        operator = OperatorThread(settings, server=cluster.url).start()
        say(
            f"operator running: analyses the last {options.window:g} s of each Job every {options.interval:g} s "
            f"(a cluster would use minutes)"
        )
        switch = time.time() + options.switch_after
        for j in jobs:
            j.switch(switch)
        live = stream.isatty() if options.live is None else options.live
        reports = watch(cluster, jobs, Progress(stream, jobs, options.duration, live=live), options.duration)
        html = _write_html(options, settings, jobs, reports)
        return reports, html
    finally:
        if operator is not None:
            operator.stop()
        cluster.stop()
        if prom is not None:
            prom.stop()


def _min_window(options: DemoOptions) -> float:
    return min(options.window, 30.0)


def demo_settings(options: DemoOptions, prometheus_url: str) -> Settings:
    """The operator's settings for the demo: short windows analysed often, on the demo's scrape interval."""
    values: dict[str, Any] = {
        "prometheus_url": prometheus_url,
        "window": options.window,
        "step": SCRAPE,
        "min_window": _min_window(options),
        "metrics_port": 0,
        "liveness_endpoint": "",
        "webhook_enabled": False,
    }
    settings = Settings(**values)
    # Below the setting's floor (faster than a cluster would go): set past validation on purpose.
    settings.analysis = settings.analysis.model_copy(update={"interval": options.interval})
    return settings


def _write_html(
    options: DemoOptions, settings: Settings, jobs: list[DemoJob], reports: list[dict[str, Any]]
) -> Path | None:
    """The changing Job's report as an HTML page, with its recent signals (read while Prometheus is up)."""
    from bottleneck_operator.html import write_html
    from bottleneck_operator.pipeline import Analyzer, JobRequest

    changing = next(j for j in jobs if j.changes)
    ns, name = changing.key.split("/")
    report = next((t for t in map(read_report, reports) if t.key == changing.key), None)
    if report is None:
        return None
    path = options.html or Path(tempfile.gettempdir()) / "bottleneck-demo" / f"{ns}-{name}.html"
    now = time.time()
    request = JobRequest(namespace=ns, job=name, start=max(changing.first.start, now - HTML_SPAN), end=now)
    window = Analyzer.from_settings(settings).analyze_jobs([request])[0].window
    with contextlib.suppress(OSError):  # a directory that cannot be made fails the write, which says why
        path.parent.mkdir(parents=True, exist_ok=True)
    return write_html(report.status, path, window=window, name=changing.key)
