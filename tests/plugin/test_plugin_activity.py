"""`show --prometheus-url`: the Job's GPU activity under its verdict timeline, read from a real Prometheus."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from _plugin_support import Reports, Run

from bottleneck_operator.plugin.render import SPARKS
from bottleneck_operator.reports import TimelineEntry, rfc3339

pytestmark = pytest.mark.prometheus


def _status_with_timeline(sim_dataset: Any, job: Any, windows: int) -> dict[str, Any]:
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings

    analyzer = Analyzer.from_settings(Settings.model_validate({"prometheus_url": sim_dataset.prom.url}))
    result = analyzer.analyze_jobs([JobRequest(namespace=job.namespace, job=job.name, start=job.start, end=job.end)])
    status = result[0].status
    width = (job.end - job.start) / windows
    status.timeline = [
        TimelineEntry(
            start=rfc3339(job.start + i * width),
            end=rfc3339(job.start + (i + 1) * width),
            bottleneck=status.bottleneck or "Unknown",
            confidence=status.confidence or 0.0,
        )
        for i in range(windows)
    ]
    return status.dump()


def test_gpu_row_follows_the_jobs_activity(sim_dataset: Any, reports: Reports, run: Run, tmp_path: Path) -> None:
    job = sim_dataset.jobs[0]
    status = _status_with_timeline(sim_dataset, job, windows=3)
    reports.add(job.namespace, job.name, status)
    page = tmp_path / "page.html"
    code, out, err = run(
        "show", job.name, "-n", job.namespace, "--prometheus-url", sim_dataset.prom.url, "--html", str(page)
    )
    assert code == 0, err
    row = re.search(r"^  GPU active   (.*)$", out, re.M)
    assert row is not None, out
    assert len(row.group(1)) == 3 and set(row.group(1)) <= set(SPARKS)
    # the report's mean GPU activity sits within one level of the windows' blocks
    level = min(len(SPARKS) - 1, int(status["gpuActive"] * len(SPARKS)))
    assert all(abs(SPARKS.index(c) - level) <= 1 for c in row.group(1)), (row.group(1), status["gpuActive"])
    # with the window at hand the HTML page draws the signals too
    points = {m[1]: int(m[2]) for m in re.finditer(r'data-plot="([^"]+)" data-points="(\d+)"', page.read_text())}
    assert points.get("gpu-activity", 0) > 10, points


def test_a_job_prometheus_never_saw_has_no_samples(sim_dataset: Any, reports: Reports, run: Run) -> None:
    job = sim_dataset.jobs[0]
    status = _status_with_timeline(sim_dataset, job, windows=2)
    reports.add(job.namespace, "renamed", status, job="never-ran")
    code, out, err = run("show", "renamed", "-n", job.namespace, "--prometheus-url", sim_dataset.prom.url)
    assert code == 0, err
    assert "  GPU active   <no samples>" in out


def test_unreachable_prometheus_is_one_line(reports: Reports, run: Run, bad_server: Any) -> None:
    from _plugin_support import io_status

    reports.add("ml", "train-io", io_status())
    code, out, err = run(
        "show", "train-io", "-n", "ml", "--prometheus-url", bad_server.refused_url, "--prometheus-timeout", "1"
    )
    assert code == 1 and out == ""
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
