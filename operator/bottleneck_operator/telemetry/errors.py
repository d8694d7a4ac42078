"""The data layer's errors: the project's tree (:mod:`bottleneck_operator.errors`) at the Prometheus boundary.

Nothing from ``requests`` or ``urllib3`` leaves the public functions of
:mod:`bottleneck_operator.telemetry`: each library exception is wrapped in one of these, with the
original chained as ``__cause__`` so a debug log still shows it.
"""

from __future__ import annotations

from bottleneck_operator.errors import NoData, Rejected, Unavailable, UsageError

__all__ = [
    "InvalidName",
    "InvalidWindow",
    "NoData",
    "PrometheusUnavailable",
    "QueryRejected",
    "QueryTimeout",
]


class PrometheusUnavailable(Unavailable):
    """Prometheus could not be reached or kept failing (refused, DNS, TLS, timeout, 5xx) after retries."""


class QueryTimeout(PrometheusUnavailable):
    """A query got no answer within ``prometheus_timeout`` seconds, retries included."""


class QueryRejected(Rejected):
    """Prometheus answered, but refused the query (4xx) or the answer is not Prometheus JSON."""


class InvalidName(UsageError):
    """A namespace/Job/label name that cannot be one: refused before any query is built."""


class InvalidWindow(UsageError):
    """A time window that cannot be queried (end before start, not a finite time)."""
