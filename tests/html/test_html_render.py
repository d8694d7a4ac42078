"""Rendering without a browser: hostile values are escaped, and nothing imports matplotlib early."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

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


def test_stragglers_are_named_with_what_lags_and_escaped() -> None:
    straggler = {
        "namespace": "ml",
        "job": "train",
        "pod": HOSTILE,
        "node": "gpu-node-7",
        "gpu": "3",
        "cause": "throttled-clock",
        "share": 0.12,
        "evidence": [{"signal": "clock_rel_peak", "observed": 0.71, "peers": 0.98, "score": -6.2}],
    }
    page = render_html({"bottleneck": "Interconnect", "confidence": 0.8, "stragglers": [straggler]})
    assert '<h2 id="stragglers">' in page and "<script" not in page
    assert "on gpu-node-7 GPU 3</b>: throttled-clock, 12" in page
    assert "clock_rel_peak 0.71 against the peers' 0.98" in page
    assert 'id="stragglers"' not in render_html({"bottleneck": "GPU", "confidence": 0.9})


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
    import numpy as np

    from bottleneck_operator.contract.window import JobWindow, PodWindow
    from bottleneck_operator.html.series import HEATMAP_COLUMNS, MAX_POD_LINES, MAX_POINTS

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
    series = {m[1]: int(m[2]) for m in re.finditer(r'data-plot="([^"]+)" data-points="\d+" data-series="(\d+)"', page)}
    assert 0.9 * MAX_POINTS <= points["gpu-activity"] <= MAX_POINTS  # the Job's mean only, averaged down
    assert series["gpu-activity"] == 1
    # every pod is still there: one heat-map row each, averaged down to at most HEATMAP_COLUMNS columns
    pods = 3 * MAX_POD_LINES
    assert series["gpu-heatmap"] == pods
    assert 0.9 * pods * HEATMAP_COLUMNS <= points["gpu-heatmap"] <= pods * HEATMAP_COLUMNS
    heat = page[page.index('id="plot-gpu-heatmap"') :]
    assert all(f">train-{i}<" in heat for i in range(pods))  # named on its axis
    # the limiting stage for GPU falls back to gpu_util when there are no profiling fields
    assert points["limiting-stage"] == points["gpu-activity"]
    assert len(page) < 1_000_000


def test_few_pods_draw_lines_and_no_heat_map() -> None:
    from bottleneck_operator.html.series import MAX_POD_LINES

    page = render_html({"bottleneck": "GPU", "confidence": 0.8}, window=_window(MAX_POD_LINES, {}))
    assert 'data-plot="gpu-heatmap"' not in page
    assert f'data-plot="gpu-activity" data-points="{MAX_POD_LINES * 40 + 40}" data-series="{MAX_POD_LINES + 1}"' in page


def _window(pods: int, extra: dict[str, float]) -> Any:
    """``pods`` pods over 40 samples: GPU busy 0.4, and each extra signal at its constant value."""
    import numpy as np

    from bottleneck_operator.contract.window import JobWindow, PodWindow

    start = 1767225600.0
    ts = start + 15.0 * np.arange(40)
    signals = {"gr_engine_active": np.full(ts.size, 0.4), **{k: np.full(ts.size, v) for k, v in extra.items()}}
    members = tuple(PodWindow(f"train-{i}", f"node-{i}", None, 1, dict(signals)) for i in range(pods))
    return JobWindow("ml", "job", start, float(ts[-1]), 15.0, ts, members)


def test_step_time_stacks_computing_and_each_measured_wait() -> None:
    from bottleneck_operator.html.shares import UNEXPLAINED, step_shares

    # 40 % busy; I/O pressure 0.5 and memory pressure 0.3 together exceed the 60 % idle: scaled to fit it
    shares = step_shares(_window(2, {"sc_psi_io_some": 0.5, "sc_psi_mem_some": 0.3, "sc_throttled_frac": 0.05}))
    assert shares is not None
    by = {layer.label: float(layer.y[0]) for layer in shares.layers}
    assert by["computing (GPU busy)"] == 0.4
    assert by["waiting for I/O"] > by["waiting for Memory"] > by["waiting for CPU"] > 0
    assert sum(by.values()) == pytest.approx(1.0)
    assert by[UNEXPLAINED] == pytest.approx(0.0)
    # a small wait leaves the rest of the idle time unexplained, not spread over the waits
    few = step_shares(_window(2, {"sc_psi_io_some": 0.1}))
    assert few is not None
    assert {layer.label: round(float(layer.y[0]), 6) for layer in few.layers} == {
        "computing (GPU busy)": 0.4,
        "waiting for I/O": 0.1,
        UNEXPLAINED: 0.5,
    }
    page = render_html({"bottleneck": "IO", "confidence": 0.8}, window=_window(2, {"sc_psi_io_some": 0.1}))
    assert 'data-plot="step-time" data-points="40" data-series="3"' in page


def test_every_signal_has_a_plain_name_and_no_axis_shows_an_id() -> None:
    from bottleneck_operator.contract.labels import SIGNAL_LABELS
    from bottleneck_operator.contract.signals import SIGNALS

    assert set(SIGNAL_LABELS) == set(SIGNALS)
    assert all(label and "_" not in label for label in SIGNAL_LABELS.values())
    window = _window(3, {"sc_psi_io_some": 0.2, "sc_io_read_bps": 5e8, "cpu_cores": 3.0, "cpu_limit_cores": 4.0})
    for cls in ("IO", "CPU", "GPU"):
        page = render_html({"bottleneck": cls, "confidence": 0.8}, window=window)
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", page)
        assert texts, "the SVGs carry no text"
        shown = [t for t in texts for sig in SIGNALS if re.search(rf"\b{sig}\b", t)]
        assert not shown, (cls, shown)
        assert "(%)" in page and "GPU graphics engine busy" in page


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
