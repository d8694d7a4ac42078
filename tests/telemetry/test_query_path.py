"""The path of one analysis from its request to PromQL and back, traced against a real Prometheus.

Prints the figures (``-s``): modules of the package and of ``telemetry`` visited, and how often the
path goes back to a module it had already left. Before the pipeline was cut into plan, fetch and
assemble (the same call, same data) it visited 53 modules of the package, 21 of them in telemetry,
and stepped back into a module already left by 213 distinct steps (109 within telemetry); after, 45
modules of the package, 13 of telemetry, and 178 steps back (76 within telemetry). With the range
answer's decoder beside the transport, its chunks on the grid, and the label layout's query in
discovery and its cache in the store (``fetch/answers.py`` and ``fetch/layouts.py`` gone): 43 modules
of the package, 11 of telemetry, and 163 steps back (61 within telemetry).
"""

from __future__ import annotations

import pytest

from bottleneck_operator.pipeline import Analyzer, JobRequest
from bottleneck_operator.settings import Settings

from .querypath import trace

pytestmark = pytest.mark.prometheus
T0 = 1767225600

# The bounds the pipeline keeps; a change that sends the path back and forth again fails here.
TELEMETRY_MODULES = 11
TELEMETRY_RETURNS = 61


def test_query_path_reads_in_one_direction(basic_prometheus) -> None:  # type: ignore[no-untyped-def]
    analyzer = Analyzer.from_settings(Settings(prometheus_url=basic_prometheus.url, step=30.0))
    request = JobRequest(namespace="ml", job="resnet-io", start=T0, end=T0 + 600)
    (result,), path = trace(lambda: analyzer.analyze_jobs([request], phase="Completed"))
    assert result.window.pods, "the traced call must read the Job's pods"
    package, telemetry = path.modules(), path.modules("bottleneck_operator.telemetry")
    print(
        f"\nquery path: {len(package)} modules of the package, {len(telemetry)} of telemetry; "
        f"returns to a module already left: {path.returns()} (telemetry: "
        f"{path.returns('bottleneck_operator.telemetry')})"
    )
    print("telemetry modules:", ", ".join(sorted(m.removeprefix("bottleneck_operator.telemetry.") for m in telemetry)))
    assert len(telemetry) <= TELEMETRY_MODULES
    assert path.returns("bottleneck_operator.telemetry") <= TELEMETRY_RETURNS
