"""The wasted GPU-seconds counter behind the dashboard's "wasted GPU-hours by bottleneck" panel."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from bottleneck_operator.controller.metrics import OperatorMetrics
from bottleneck_operator.controller.passes import count_idle_gpu_time
from bottleneck_operator.reports import ClassName, DataQualityStatus, ReportStatus


def _wasted(metrics: OperatorMetrics) -> dict[str, float]:
    for family in text_string_to_metric_families(metrics.render().decode()):
        if family.name == "bottleneck_operator_wasted_gpu_seconds":
            return {s.labels["bottleneck"]: s.value for s in family.samples if s.name.endswith("_total")}
    raise AssertionError("counter not exported")


def _status(bottleneck: ClassName, gpu_active: float | None, gpus: int) -> ReportStatus:
    quality = DataQualityStatus(families=["dcgm"], missing_families=[], coverage=1.0, pods=1, gpus=gpus)
    return ReportStatus(bottleneck=bottleneck, gpu_active=gpu_active, data_quality=quality)


def test_idle_gpu_time_is_charged_to_the_verdict() -> None:
    metrics = OperatorMetrics()
    statuses = [
        _status("IO", 0.25, 8),
        _status("IO", 0.5, 2),
        _status("GPU", 1.2, 4),  # over 1: never negative
        _status("CPU", None, 4),  # no activity figure: not charged
        _status("Memory", 0.1, 0),
    ]
    count_idle_gpu_time(metrics, statuses, 60.0)
    wasted = _wasted(metrics)
    assert wasted["IO"] == (0.75 * 8 + 0.5 * 2) * 60.0
    assert wasted["GPU"] == 0.0
    assert wasted["CPU"] == 0.0 and wasted["Memory"] == 0.0
