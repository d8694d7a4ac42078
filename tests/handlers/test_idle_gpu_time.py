"""The wasted GPU-seconds counter behind the dashboard's "wasted GPU-hours by bottleneck" panel."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from bottleneck_operator.controller.metrics import OperatorMetrics
from bottleneck_operator.controller.passes import count_idle_gpu_time


def _wasted(metrics: OperatorMetrics) -> dict[str, float]:
    for family in text_string_to_metric_families(metrics.render().decode()):
        if family.name == "bottleneck_operator_wasted_gpu_seconds":
            return {s.labels["bottleneck"]: s.value for s in family.samples if s.name.endswith("_total")}
    raise AssertionError("counter not exported")


def test_idle_gpu_time_is_charged_to_the_verdict() -> None:
    metrics = OperatorMetrics()
    statuses = [
        {"bottleneck": "IO", "gpuActive": 0.25, "dataQuality": {"gpus": 8}},
        {"bottleneck": "IO", "gpuActive": 0.5, "dataQuality": {"gpus": 2}},
        {"bottleneck": "GPU", "gpuActive": 1.2, "dataQuality": {"gpus": 4}},  # over 1: never negative
        {"bottleneck": "CPU", "dataQuality": {"gpus": 4}},  # no activity figure: not charged
        {"bottleneck": "Memory", "gpuActive": 0.1, "dataQuality": {"gpus": 0}},
    ]
    count_idle_gpu_time(metrics, statuses, 60.0)
    wasted = _wasted(metrics)
    assert wasted["IO"] == (0.75 * 8 + 0.5 * 2) * 60.0
    assert wasted["GPU"] == 0.0
    assert wasted["CPU"] == 0.0 and wasted["Memory"] == 0.0
