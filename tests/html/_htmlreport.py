"""A real report to render: one simulated Job analysed from a real Prometheus, with its window.

The timeline is real too: the Job's window is cut in three and each part analysed on its own, as the
operator does while a Job runs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.reports import rfc3339

CLEAR_MARGIN = 0.3
PARTS = 3


@dataclass
class Analysed:
    status: dict[str, Any]
    window: JobWindow
    name: str


@pytest.fixture(scope="session")
def analysed(sim_dataset: Any) -> Analysed:
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings

    clear = [j for j in sim_dataset.jobs if not j.ambiguous and j.margin >= CLEAR_MARGIN]
    if not clear:
        pytest.skip("the simulated dataset has no clear-cut job")
    # A multi-pod Job whose class has a capacity to plot against, when there is one.
    job = max(clear, key=lambda j: (len(j.pods) > 1, j.label.value in ("CPU", "IO")))
    analyzer = Analyzer.from_settings(Settings(prometheus_url=sim_dataset.prom.url))
    cuts = [job.start + (job.end - job.start) * i / PARTS for i in range(PARTS + 1)]
    requests = [JobRequest(namespace=job.namespace, job=job.name, start=job.start, end=job.end)]
    requests += [JobRequest(namespace=job.namespace, job=job.name, start=a, end=b) for a, b in itertools.pairwise(cuts)]
    # One call per window: a batch holds one window per Job.
    whole, *parts = [analyzer.analyze_jobs([r])[0] for r in requests]
    assert whole.window is not None and whole.window.pods
    status = whole.status.dump()
    status["timeline"] = [
        {
            "start": rfc3339(p.request.start),
            "end": rfc3339(p.request.end),
            "bottleneck": p.status.dump()["bottleneck"],
            "confidence": p.status.dump()["confidence"],
        }
        for p in parts
    ]
    assert whole.window.duration == pytest.approx(job.end - job.start, abs=60)
    return Analysed(status=status, window=whole.window, name=f"{job.namespace}/{job.name}")
