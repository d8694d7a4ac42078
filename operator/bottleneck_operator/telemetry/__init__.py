"""Prometheus access in three stages, plan → fetch → assemble, and the data layer's own errors.

Public entry points: :class:`~.fetch.client.PrometheusClient`, :func:`~.windows.fetch_windows`,
:class:`~.windows.WindowRequest`, :func:`~.fetch.lifetime.job_lifetime`, and :mod:`.errors`.
"""

from bottleneck_operator.telemetry.errors import (
    InvalidName,
    InvalidWindow,
    NoData,
    PrometheusUnavailable,
    QueryRejected,
    QueryTimeout,
)
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.lifetime import job_lifetime
from bottleneck_operator.telemetry.windows import WindowRequest, fetch_windows

__all__ = [
    "InvalidName",
    "InvalidWindow",
    "NoData",
    "PrometheusClient",
    "PrometheusUnavailable",
    "QueryRejected",
    "QueryTimeout",
    "WindowRequest",
    "fetch_windows",
    "job_lifetime",
]
