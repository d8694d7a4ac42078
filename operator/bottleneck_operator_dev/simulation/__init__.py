"""The telemetry simulator: physically grounded training jobs with ground-truth bottlenecks.

``generate_jobs`` draws jobs; each renders as the signals of a window (``SimulatedJob.to_window``), as
OpenMetrics text for promtool backfilling (``write_openmetrics``) and as live exporter endpoints
(``LiveExporters``). See docs/simulator.md for the model and its sources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bottleneck_operator_dev.simulation.jobs import SimulatedJob, generate_jobs
from bottleneck_operator_dev.simulation.openmetrics import write_openmetrics
from bottleneck_operator_dev.simulation.record import SimNode, SimPod
from bottleneck_operator_dev.simulation.scenario import Scenario, in_holdout

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.live import LiveExporters

__all__ = [
    "LiveExporters",
    "Scenario",
    "SimNode",
    "SimPod",
    "SimulatedJob",
    "generate_jobs",
    "in_holdout",
    "write_openmetrics",
]


def __getattr__(name: str) -> Any:
    # aiohttp is imported only by whoever serves live endpoints.
    if name == "LiveExporters":
        from bottleneck_operator_dev.simulation.live import LiveExporters

        return LiveExporters
    raise AttributeError(name)
