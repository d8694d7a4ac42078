"""BottleneckOperatorPassesStalled: fires when no analysis pass has completed for N intervals, and only then.

Evaluated by promtool's rule unit tests on the operator's own gauge
(``bottleneck_operator_last_pass_completed_timestamp_seconds``) given with explicit times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._helpers import FULL_VALUES, Manifest, render_docs
from .test_chart_alerts import JOB, _fires, _promtool_test, _rules, needs_promtool

ALERT = "BottleneckOperatorPassesStalled"


def _render(chart: Any, intervals: int, interval: int) -> list[Manifest]:
    values = {
        **FULL_VALUES,
        "analysis": {**FULL_VALUES.get("analysis", {}), "interval": interval},
        "prometheusRule": {**FULL_VALUES["prometheusRule"], "passesStalledIntervals": intervals},
    }
    return render_docs(chart, values)


def test_the_threshold_is_n_intervals(chart: Any) -> None:
    expr = _rules(_render(chart, 4, 90))[ALERT]["expr"]
    assert "bottleneck_operator_last_pass_completed_timestamp_seconds" in expr
    assert expr.rstrip().endswith("> 360")


@needs_promtool
def test_fires_only_once_passes_stop_for_n_intervals(chart: Any, tmp_path: Path) -> None:
    # Passes every minute (interval 60 s) complete until minute 10, then none completes. With N = 5
    # the alert fires once the last completion is over 300 s old: from minute 16 (300 s is not over).
    docs = _render(chart, 5, 60)
    stamps = " ".join(str(60 * m) for m in range(11)) + " 600x30"
    labels = {"severity": "warning", "team": "ml", "job": JOB.split('"')[1], "namespace": JOB.split('"')[3]}
    fires = _fires(docs, ALERT, labels)
    tests: list[dict[str, Any]] = [
        {
            "interval": "1m",
            "input_series": [
                {"series": f"bottleneck_operator_last_pass_completed_timestamp_seconds{{{JOB}}}", "values": stamps},
            ],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": ALERT, "exp_alerts": []},
                {"eval_time": "15m", "alertname": ALERT, "exp_alerts": []},
                {"eval_time": "16m", "alertname": ALERT, "exp_alerts": [fires]},
                {"eval_time": "30m", "alertname": ALERT, "exp_alerts": [fires]},
            ],
        }
    ]
    _promtool_test(tmp_path, docs, tests)
