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
