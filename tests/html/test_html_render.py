"""Rendering without a browser: hostile values are escaped, and nothing imports matplotlib early."""

from __future__ import annotations

import subprocess
import sys

from bottleneck_operator.html import render_html

HOSTILE = '<script>alert("x")</script>'


def test_values_from_the_status_are_escaped() -> None:
    status = {
        "bottleneck": "CPU",
        "confidence": 0.9,
        "reason": HOSTILE,
        "evidence": [{"signal": "cpu_cores", "observed": 3.0, "unit": "cores", "message": HOSTILE}],
        "pods": [{"pod": HOSTILE, "node": "n1", "bottleneck": "CPU", "confidence": 0.9}],
        "window": {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:15:00Z", "seconds": 900},
    }
    page = render_html(status, name=HOSTILE)
    assert "<script" not in page
    assert page.count("&lt;script&gt;") >= 4


def test_a_status_with_only_a_verdict_renders() -> None:
    page = render_html({"bottleneck": "Unknown", "reason": "no pods of Job ml/x found"})
    assert "no pods of Job ml/x found" in page
    assert 'class="plot"' not in page  # no window and no timeline: nothing to plot, and no error


def test_matplotlib_is_imported_only_when_a_page_is_written() -> None:
    code = (
        "import sys, bottleneck_operator.cli, bottleneck_operator.html, bottleneck_operator.commands.analyze\n"
        "assert 'matplotlib' not in sys.modules, 'imported early'\n"
        "from bottleneck_operator.html import render_html\n"
        "render_html({'bottleneck': 'IO', 'confidence': 1.0, 'window': {'start': '2026-01-01T00:00:00Z',"
        " 'end': '2026-01-01T00:05:00Z', 'seconds': 300}})\n"
        "assert 'matplotlib' in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_many_pods_and_a_long_window_stay_readable_and_small() -> None:
    import re

    import numpy as np

    from bottleneck_operator.contract.window import JobWindow, PodWindow
    from bottleneck_operator.html.series import MAX_POD_LINES, MAX_POINTS

    # A day at a 15 s step over 3 * MAX_POD_LINES pods: every pod busy 60 % of the time.
    start = 1767225600.0
    ts = start + 15.0 * np.arange(5760)
    rng = np.random.default_rng(7)
    pods = tuple(
        PodWindow(f"train-{i}", f"node-{i}", None, 8, {"gpu_util": rng.uniform(0.5, 0.7, ts.size)})
        for i in range(3 * MAX_POD_LINES)
    )
    window = JobWindow("ml", "big", start, float(ts[-1]), 15.0, ts, pods)
    page = render_html({"bottleneck": "GPU", "confidence": 0.8}, window=window)
    points = {m[1]: int(m[2]) for m in re.finditer(r'data-plot="([^"]+)" data-points="(\d+)"', page)}
    assert 0.9 * MAX_POINTS <= points["gpu-activity"] <= MAX_POINTS  # the Job's mean only, averaged down
    assert 'data-series="1"' in page and "train-0" not in page
    # the limiting stage for GPU falls back to gpu_util when there are no profiling fields
    assert points["limiting-stage"] == points["gpu-activity"]
    assert len(page) < 1_000_000


def test_without_matplotlib_the_error_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None  # as if the optional extra were not installed\n"
        "from bottleneck_operator.errors import UsageError\n"
        "from bottleneck_operator.html import render_html\n"
        "try:\n"
        "    render_html({'bottleneck': 'IO'})\n"
        "except UsageError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "bottleneck-operator[html]" in result.stdout
