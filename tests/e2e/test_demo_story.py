"""The demo's parts apart from the whole run: its Jobs, the changing Job's switch, the full report, the progress display."""

from __future__ import annotations

import dataclasses
import io
import time
from typing import Any

import numpy as np

from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, extract_features
from bottleneck_operator.analysis.model.classifier import load_model
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.reports import ReportStatus
from bottleneck_operator_dev.demo.progress import Progress
from bottleneck_operator_dev.demo.report import format_report, next_steps, timeline_lines
from bottleneck_operator_dev.demo.story import DemoJob, changing_job, class_jobs, observable, read_surely
from bottleneck_operator_dev.demo.watch import story_told
from bottleneck_operator_dev.simulation import generate_jobs
from bottleneck_operator_dev.simulation.live import LiveExporters

GR = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def _gpu_activity(exporters: LiveExporters, at: float) -> list[float]:
    # The node's GPUs no pod holds are exported too, with empty pod labels: only the Job's count here.
    lines = [
        line for line in exporters.render("dcgm", at).splitlines() if line.startswith(GR) and 'container=""' not in line
    ]
    return [float(line.rsplit(" ", 1)[1]) for line in lines]


def test_one_job_per_class_drawn_the_same_each_time() -> None:
    now = time.time()
    first = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)
    again = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)
    assert [j.truth for j in first] == [c.value for c in CLASSES]
    assert [j.key for j in first] == [j.key for j in again]
    assert all(not j.changes and j.first.params.env.gap_prob == 0 for j in first)


def test_the_demo_shows_jobs_whose_bottleneck_shows_in_what_is_collected() -> None:
    now = time.time()
    shown = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)
    assert all(observable(j.first) for j in shown)
    # the same PCIe-bound Job behind an exporter that collects no profiling fields is no clear case
    links = generate_jobs(7, 30, start=now - 600, duration=900, classes=[Bottleneck.INTERCONNECT], scrape_interval=15.0)
    pcie = next(j for j in links if j.mechanism is Mechanism.PCIE)
    blind = dataclasses.replace(
        pcie, params=dataclasses.replace(pcie.params, env=dataclasses.replace(pcie.params.env, dcgm_fieldset="dev"))
    )
    assert not observable(blind)
    # a remote-storage reader without the collector shows only its network plateau
    readers = generate_jobs(7, 40, start=now - 600, duration=900, classes=[Bottleneck.IO], scrape_interval=15.0)
    remote = next(j for j in readers if j.mechanism is Mechanism.NETWORK_STORAGE and "sidecar" not in j.tags)
    assert not observable(remote)
    # nor a local-disk reader seen only through the node's iowait and IO pressure, or beside a busy neighbour
    local = [j for j in readers if j.mechanism is Mechanism.LOCAL_DISK]
    assert not any(observable(j) for j in local if "sidecar" not in j.tags or "noisy_neighbour" in j.tags)
    assert any(observable(j) for j in local)


def test_the_demo_shows_of_each_class_the_job_the_model_reads_most_surely() -> None:
    """Chosen by how surely the shipped model reads the windows the demo analyses, not by the margin alone."""
    model = load_model()
    now = time.time()
    ends = [now + t for t in range(-300, 61, 60)]
    surely = read_surely(model, ends=ends, window=60.0, step=5.0, min_window=30.0)
    by_margin = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=5.0)
    by_model = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=5.0, sureness=surely)
    assert [j.truth for j in by_model] == [c.value for c in CLASSES]
    scores = [surely(j.first) for j in by_model]
    # every window of every chosen Job reads its own class (an abstention or another class scores 0)
    assert all(s >= 0.5 for s in scores), scores
    assert all(observable(j.first) for j in by_model)
    # the margin alone picks at least one Job whose windows the model reads less surely
    assert any(surely(m.first) < s for m, s in zip(by_margin, scores, strict=True))
    # what the sureness says decides among the observable Jobs of a class
    drawn = generate_jobs(7, 36, start=now - 600, duration=900, classes=list(CLASSES), scrape_interval=5.0)
    gpu = CLASSES.index(Bottleneck.GPU)
    chosen_gpu = by_model[gpu].first.name
    other = next(j.name for j in drawn if j.label is Bottleneck.GPU and observable(j) and j.name != chosen_gpu)
    picked = class_jobs(
        7, namespace="ml", start=now - 600, end=now + 300, scrape=5.0, sureness=lambda j: float(j.name == other)
    )
    assert picked[gpu].first.name == other


def test_the_demo_jobs_are_familiar_to_the_model() -> None:
    """Whole runs and the one-minute windows the demo analyses lie inside the model's training envelope."""
    model = load_model()
    assert model.envelope is not None
    now = time.time()
    jobs = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)
    jobs.append(changing_job(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0))
    for job in jobs:
        for record in job.records:
            ends = np.arange(record.start + 120.0, now + 300.0, 60.0)
            windows = [record.to_window(step=15.0)] + [record.to_window(step=15.0, start=e - 60, end=e) for e in ends]
            x = extract_features(windows)
            assert all(not model.envelope.unfamiliar(row, FEATURE_NAMES) for row in x), job.key


def test_changing_job_serves_its_cached_phase_only_after_the_switch() -> None:
    now = time.time()
    job = changing_job(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)
    before, after = job.records
    assert job.classes == ("IO", "GPU") and job.changes and job.truth == "GPU"
    assert (before.name, before.pods, before.nodes) == (after.name, after.pods, after.nodes)
    exporters = LiveExporters(list(job.records))
    dormant = _gpu_activity(exporters, now + 100)  # not switched yet: the IO-bound phase goes on
    job.switch(now + 10)
    early, late = _gpu_activity(exporters, now), _gpu_activity(exporters, now + 100)
    # One series per GPU at every time (never both phases at once), and busier GPUs once cached.
    assert len(early) == len(late) == len(dormant) == sum(p.gpu_count for p in before.pods)
    assert np.mean(late) > np.mean(early) + 0.1
    assert np.mean(dormant) < np.mean(late) - 0.1


def _entry(cls: str, end: str, conf: float = 0.9) -> dict[str, Any]:
    return {"start": "2026-01-01T00:00:00Z", "end": end, "bottleneck": cls, "confidence": conf}


def _report(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": "ml", "name": "vit"}, "status": {"phase": "Running", **status}}


def test_full_report_shows_mechanism_evidence_advice_and_the_timeline_runs() -> None:
    timeline = [_entry("IO", f"2026-01-01T00:00:{s:02d}Z") for s in (5, 10, 15)] + [
        _entry("GPU", "2026-01-01T00:00:20Z", 0.8),
        _entry("GPU", "2026-01-01T00:00:25Z", 1.0),
    ]
    text = format_report(
        _report(
            {
                "bottleneck": "GPU",
                "confidence": 0.97,
                "mechanism": "compute",
                "evidence": [{"signal": "tensor_active", "observed": 0.3, "unit": "ratio", "message": "Tensor low."}],
                "recommendations": [{"action": "Use BF16.", "signal": "tensor_active", "detail": "Faster math."}],
                "headroom": {"low": 1.2, "high": 1.9, "basis": "tensor pipes"},
                "timeline": timeline,
            }
        )
    )
    lines = text.splitlines()
    assert lines[1] == "Bottleneck    GPU  (confidence 97 %)"
    assert "Mechanism     compute" in lines
    assert "  - Tensor low." in lines and "  - Use BF16: Faster math." in lines
    assert "Headroom      x1.2 .. x1.9 faster without the bottleneck (tensor pipes)" in lines
    strip = next(line for line in lines if line.startswith("Timeline")).split()[1]
    assert strip == "IIIGG"
    assert lines[-2].split()[:4] == ["00:00:05", "..", "00:00:15", "IO"] and "3 windows" in lines[-2]
    assert lines[-1].split()[:4] == ["00:00:20", "..", "00:00:25", "GPU"] and "confidence 90 %" in lines[-1]


def test_unknown_report_says_why_and_no_timeline_means_no_timeline_lines() -> None:
    text = format_report(_report({"bottleneck": "Unknown", "reason": "only 20 % of the window has GPU samples"}))
    assert "Why Unknown   only 20 % of the window has GPU samples" in text.splitlines()
    assert timeline_lines(ReportStatus.model_validate({})) == []
    assert "Open the HTML report:   /tmp/x.html" in next_steps("/tmp/x.html")
    assert "HTML" not in next_steps(None)


def _jobs() -> list[DemoJob]:
    now = time.time()
    steady = class_jobs(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)[:1]
    return [*steady, changing_job(7, namespace="ml", start=now - 600, end=now + 300, scrape=15.0)]


def _api(job: DemoJob, cls: str, timeline: list[str]) -> dict[str, Any]:
    ns, name = job.key.split("/")
    entries = [_entry(c, f"2026-01-01T00:00:{i:02d}Z") for i, c in enumerate(timeline)]
    return {"metadata": {"namespace": ns, "name": name}, "status": {"bottleneck": cls, "timeline": entries}}


def test_story_is_told_once_the_changing_job_shows_its_new_class_twice() -> None:
    steady, changing = _jobs()
    base = _api(steady, "IO", ["IO"])
    assert not story_told([steady, changing], [base])  # no report yet for the changing Job
    assert not story_told([steady, changing], [base, _api(changing, "IO", ["IO", "IO"])])
    assert not story_told([steady, changing], [base, _api(changing, "GPU", ["IO", "GPU"])])
    assert story_told([steady, changing], [base, _api(changing, "GPU", ["IO", "GPU", "GPU"])])
    unknown = _api(steady, "Unknown", ["Unknown"])
    assert not story_told([steady, changing], [unknown, _api(changing, "GPU", ["IO", "GPU", "GPU"])])


def test_progress_redraws_in_place_on_a_terminal_and_prints_few_lines_otherwise() -> None:
    jobs = _jobs()
    reports = [_api(jobs[0], "IO", ["IO"]), _api(jobs[1], "IO", ["IO", "IO", "GPU"])]
    live = io.StringIO()
    progress = Progress(live, jobs, 60.0, live=True)
    progress.update(1.0, reports)
    progress.update(30.0, reports)
    text = live.getvalue()
    assert text.count("\x1b[J") == 1  # the second drawing replaced the first
    assert "[############............]  30 s" in text
    assert "IIG" in text and "I→G" in text and jobs[1].key in text
    plain = io.StringIO()
    progress = Progress(plain, jobs, 60.0, live=False)
    for t in range(0, 60):
        progress.update(float(t), reports)
    lines = plain.getvalue().splitlines()
    assert "\x1b[" not in plain.getvalue() and len(lines) == 3
    assert lines[0] == "[  0.0s] 2 reports, 2 with a verdict"
