"""`analyze --html FILE` against a real Prometheus holding backfilled simulated jobs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.cli import main as cli_main
from bottleneck_operator.commands.html_timeline import pass_windows
from bottleneck_operator.reports import rfc3339
from bottleneck_operator.settings import Settings

pytestmark = pytest.mark.prometheus


def _analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(["analyze", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _points(page: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r'data-plot="([^"]+)" data-points="(\d+)"', page)}


def test_html_is_written_beside_the_json(sim_dataset: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    job = sim_dataset.jobs[0]
    out_file = tmp_path / "report.html"
    code, out, err = _analyze(
        capsys,
        "--prometheus-url", sim_dataset.prom.url, "--namespace", job.namespace, "--job", job.name,
        "--start", rfc3339(job.start), "--end", rfc3339(job.end), "--output", "json", "--html", str(out_file),
    )  # fmt: skip
    assert code == 0, err
    status = json.loads(out)  # stdout stays pure JSON: the note about the page goes to stderr
    assert str(out_file) in err
    page = out_file.read_text()
    assert f"{job.namespace}/{job.name}" in page and status["bottleneck"] in page
    points = _points(page)
    # the operator's passes replayed: a window ending every minute (the default interval), each 15 minutes back
    settings = Settings()
    windows = pass_windows(
        job.start, job.end, interval=settings.analysis.interval, window=settings.analysis.window,
        min_window=settings.analysis.min_window, limit=settings.operation.timeline_length,
    )  # fmt: skip
    assert len(windows) >= 10 and windows[-1][1] == job.end
    assert points.get("gpu-activity", 0) > 10 and points.get("timeline") == len(windows), points
    assert points.get("step-time", 0) > 10, points


def test_no_data_still_writes_a_page_with_the_reason(
    sim_dataset: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "missing.html"
    code, out, _ = _analyze(
        capsys,
        "--prometheus-url", sim_dataset.prom.url, "--namespace", "ml", "--job", "no-such-job",
        "--end", str(sim_dataset.end), "--lookback", "3600", "--html", str(out_file), "--output", "json",
    )  # fmt: skip
    assert code == 3
    page = out_file.read_text()
    assert json.loads(out)["reason"] in page.replace("&#x27;", "'")
    assert 'id="no-signals"' in page


def test_unwritable_html_path_is_a_usage_error(
    sim_dataset: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    job = sim_dataset.jobs[0]
    target = tmp_path / "no-such-dir" / "report.html"
    code, _out, err = _analyze(
        capsys,
        "--prometheus-url", sim_dataset.prom.url, "--namespace", job.namespace, "--job", job.name,
        "--start", str(job.start), "--end", str(job.end), "--html", str(target),
    )  # fmt: skip
    assert code == 2
    assert "--html" in err and "Traceback" not in err
    assert not target.exists()


def test_pass_windows_replay_the_operators_passes() -> None:
    # a 15-minute run, passes every minute over 15 minutes, none shorter than 2: the 14 passes from minute 2
    windows = pass_windows(0.0, 900.0, interval=60.0, window=900.0, min_window=120.0, limit=48)
    assert windows[0] == (0.0, 120.0) and windows[-1] == (0.0, 900.0)
    assert [b for _, b in windows] == [120.0 + 60.0 * i for i in range(14)]
    # a day-long run keeps the timeline's length, spaced evenly, each window 15 minutes back
    day = pass_windows(0.0, 86400.0, interval=60.0, window=900.0, min_window=120.0, limit=48)
    assert len(day) == 48 and day[-1] == (85500.0, 86400.0)
    assert {round(b - a) for a, b in day[1:]} == {900}
    assert pass_windows(10.0, 10.0, interval=60.0, window=900.0, min_window=120.0, limit=48) == []
