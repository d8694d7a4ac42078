"""`analyze` refuses absurd windows with exit 2 and one clear line, before any query, and reads a long
window at a bounded step (a real Prometheus behind a counting proxy says what was asked)."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.parse
from typing import Any

import pytest

from bottleneck_operator.cli import main as cli_main
from bottleneck_operator.errors import EXIT_USAGE
from bottleneck_operator.telemetry.plan.grid import SERIES_POINTS
from prom_proxy import PromProxy

NOW = time.time()
DAY = 86400.0


def _run(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str]:
    code = cli_main(["analyze", "--prometheus-url", url, "-n", "ml", "--job", "train", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--start", "1e30", "--end", str(NOW)], "--start lies in the future"),
        (["--start", "0", "--end", "1e30"], "--end lies in the future"),
        (["--start", str(NOW - 600), "--end", str(NOW + 3 * DAY)], "--end lies in the future"),
        (["--start", "0", "--end", "1700000000"], "over the 31-day maximum"),
        (["--start", str(NOW - 600), "--end", str(NOW - 600)], "--end must be after --start"),
        (["--start", str(NOW), "--end", str(NOW - 600)], "--end must be after --start"),
        (["--start", "nan", "--end", str(NOW)], "--start: not a valid time"),
        (["--start", "inf"], "--start: not a valid time"),
        (["--start", "9999-12-31T23:59:59+14:00"], "--start lies in the future"),
        (["--end", "1e308"], "--end lies in the future"),
        (["--lookback", "nan"], "--lookback must be a positive number"),
        (["--lookback", "1e30"], "--lookback must be a positive number"),
        (["--start", str(NOW - 600), "--end", str(NOW), "--step", "inf"], "--step must be"),
    ],
)
def test_absurd_windows_exit_2_before_any_query(
    bad_server: Any, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    before = bad_server.hits("ok")
    code, err = _run(capsys, bad_server.url("ok"), *argv)
    assert code == EXIT_USAGE
    assert says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert bad_server.hits("ok") == before  # refused before querying


def test_the_overflowing_start_of_the_report_exits_2_from_the_real_executable(bad_server: Any) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator", "analyze", "--prometheus-url", bad_server.url("ok"),
         "-n", "ml", "--job", "train", "--start", "1e30"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE
    assert "Traceback" not in result.stderr and "lies in the future" in result.stderr


@pytest.mark.prometheus
def test_a_long_window_is_read_at_a_bounded_step(basic_prometheus: Any, capsys: pytest.CaptureFixture[str]) -> None:
    steps: list[float] = []
    with PromProxy(basic_prometheus.url) as proxy:
        seen = proxy.seen = []
        end = 1767225600.0 + 600
        start = end - 20 * DAY
        code, err = _run(capsys, proxy.url, "--start", str(start), "--end", str(end), "--step", "15", "-o", "json")
        for path in seen:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
            if "step" in query:
                steps.append(float(query["step"][0]))
    assert code in (0, 3), err
    assert "--step 15 raised to" in err
    assert steps and all((end - start) / s <= SERIES_POINTS for s in steps)
