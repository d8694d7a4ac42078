"""The data layer's own error tree.

Nothing from ``requests`` or ``prometheus_api_client`` leaves the public functions of
:mod:`bottleneck_operator.telemetry`: each library exception is wrapped in one of these, with the
original chained as ``__cause__`` so a debug log still shows it.
"""

from __future__ import annotations

from bottleneck_operator.errors import (
    EXIT_NO_DATA,
    EXIT_PROMETHEUS_UNREACHABLE,
    EXIT_USAGE,
    BottleneckError,
    UsageError,
)


class TelemetryError(BottleneckError):
    """Base of every error raised by the data layer."""

    exit_code = EXIT_PROMETHEUS_UNREACHABLE


class PrometheusUnavailable(TelemetryError):
    """Prometheus could not be reached or kept failing (refused, DNS, TLS, timeout, 5xx) after retries."""

    exit_code = EXIT_PROMETHEUS_UNREACHABLE


class QueryTimeout(PrometheusUnavailable):
    """A query got no answer within ``prometheus_timeout`` seconds, retries included."""


class QueryFailed(TelemetryError):
    """Prometheus answered, but not with a usable result (4xx, malformed or non-Prometheus JSON)."""

    exit_code = EXIT_PROMETHEUS_UNREACHABLE


class NoData(TelemetryError):
    """Prometheus holds no telemetry for what was asked (e.g. a Job it never saw)."""

    exit_code = EXIT_NO_DATA


class InvalidName(TelemetryError, UsageError):
    """A namespace/Job name that cannot be a Kubernetes name: refused before any query is built."""

    exit_code = EXIT_USAGE


class InvalidWindow(TelemetryError, UsageError):
    """A time window that cannot be queried (end before start, not a finite time)."""

    exit_code = EXIT_USAGE
