"""Composition of the data layer and the analysis: window requests in, verdicts and report statuses out.

Used by ``analyze`` (one job), the operator's pass (all running profiled jobs at once) and
``evaluate`` (held-out scenarios through a real Prometheus). One batched fetch per call: the number of
Prometheus queries does not grow with the number of jobs.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bottleneck_operator.analysis.classify import analyze_windows
from bottleneck_operator.analysis.model.classifier import BottleneckModel, load_model
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Verdict
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.reports import Phase, ReportStatus, status_from_verdict
from bottleneck_operator.settings import AnalysisSettings, LabelSettings, PrometheusSettings, Settings
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.store import IntervalCache
from bottleneck_operator.telemetry.windows import WindowRequest, fetch_windows

JobRequest = WindowRequest
CLASSIFY_CHUNK = 64  # windows classified at once

log = logging.getLogger(__name__)


@dataclass
class JobResult:
    """The outcome for one requested job window.

    Attributes:
        request: what was asked.
        window: the telemetry found (None only if the data layer returned nothing for the key).
        verdict: the verdict (Unknown with a reason when there was no or too little data).
        status: the report status built from it.
    """

    request: JobRequest
    window: JobWindow | None
    verdict: Verdict
    status: ReportStatus


class Analyzer:
    """Fetches windows for many jobs at once and classifies them.

    Args:
        prometheus: how to reach Prometheus, and the longest query it accepts.
        labels: the label mapping of the installation.
        analysis: the grid step, the classifier's thresholds and the model file.
        model: the classifier; default the file ``analysis.model_path`` or the shipped model.
        client: a Prometheus client; default one built from ``prometheus``.
    """

    def __init__(
        self,
        prometheus: PrometheusSettings,
        labels: LabelSettings,
        analysis: AnalysisSettings,
        *,
        model: BottleneckModel | None = None,
        client: PrometheusClient | None = None,
    ) -> None:
        self.prometheus = prometheus
        self.labels = labels
        self.analysis = analysis
        self.model = model if model is not None else load_model(analysis.model_path)
        self.client = client if client is not None else PrometheusClient(prometheus)
        # Scrape intervals do not change between passes: each pod is estimated once, then reused.
        self.intervals = IntervalCache()

    @classmethod
    def from_settings(
        cls, settings: Settings, *, model: BottleneckModel | None = None, client: PrometheusClient | None = None
    ) -> Analyzer:
        """An analyzer on the three groups of ``settings`` it reads (the entry points hold all settings)."""
        return cls(settings.prometheus, settings.labels, settings.analysis, model=model, client=client)

    @property
    def queries_issued(self) -> int:
        """Prometheus queries issued by this analyzer's client so far."""
        return int(self.client.queries_issued)

    @property
    def model_version(self) -> str:
        return self.model.version

    def classify(self, windows: Sequence[JobWindow], *, with_details: bool = True) -> list[Verdict]:
        """Verdicts for windows already fetched, under this analyzer's model and thresholds.

        Args:
            windows: the job windows.
            with_details: also build evidence, recommendations and headroom.

        Returns:
            One verdict per window, in order.
        """
        s = self.analysis
        verdicts: list[Verdict] = []
        # In chunks: the feature arrays of a chunk (every pod's signals, twice over for the per-pod
        # verdicts) are its peak memory, and a chunk is already large enough to vectorise well.
        for i in range(0, len(windows), CLASSIFY_CHUNK):
            verdicts += analyze_windows(
                windows[i : i + CLASSIFY_CHUNK],
                self.model,
                abstain_threshold=s.abstain_threshold,
                min_coverage=s.min_coverage,
                min_window=s.min_window,
                secondary_margin=s.secondary_margin,
                with_details=with_details,
            )
        return verdicts

    def analyze_jobs(
        self, requests: Sequence[JobRequest], *, phase: Phase = "Running", step: float | None = None
    ) -> list[JobResult]:
        """One verdict per request, from one batched fetch.

        Args:
            requests: the job windows to analyse.
            phase: the phase written into each status.
            step: the grid step, seconds (default ``analysis.step``; long windows are read coarser,
                see :mod:`.telemetry.plan.grid`).

        Returns:
            Results in request order; a job without data gets an Unknown verdict with a reason.

        Raises:
            PrometheusUnavailable, QueryRejected: Prometheus is down or refuses the queries.
        """
        if not requests:
            return []
        started = time.perf_counter()
        queries_before = self.queries_issued
        windows = fetch_windows(
            self.client,
            list(requests),
            self.labels,
            step=step or self.analysis.step,
            max_query_bytes=self.prometheus.max_query_bytes,
            intervals=self.intervals,
        )
        found = [windows.get((r.namespace, r.job)) for r in requests]
        present = [(r, w) for r, w in zip(requests, found, strict=True)]
        filled = [w if w is not None else _empty_window(r) for r, w in present]
        verdicts = self.classify(filled)
        results = [
            JobResult(request=r, window=w, verdict=v, status=status_from_verdict(v, fw, phase=phase))
            for (r, w), fw, v in zip(present, filled, verdicts, strict=True)
        ]
        by_class = Counter(v.bottleneck.value for v in verdicts)
        log.info(
            "analysed %d jobs: %s; %d queries; %.2f s",
            len(results),
            ", ".join(f"{c.value}={by_class.get(c.value, 0)}" for c in (*CLASSES, Bottleneck.UNKNOWN)),
            self.queries_issued - queries_before,
            time.perf_counter() - started,
        )
        return results


def _empty_window(request: JobRequest) -> JobWindow:
    import numpy as np

    return JobWindow(
        namespace=request.namespace,
        job=request.job,
        start=request.start,
        end=request.end,
        step=0.0,
        timestamps=np.empty(0),
        pods=(),
    )
