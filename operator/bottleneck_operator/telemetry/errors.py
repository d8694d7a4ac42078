"""The data layer's errors: the project's tree (:mod:`bottleneck_operator.errors`) at the Prometheus boundary.

Nothing from the HTTP library (httpx) leaves the public functions of
:mod:`bottleneck_operator.telemetry`: each failure is wrapped in one of these, with the operating
system's or the library's exception chained as ``__cause__`` so a debug log still shows it. Each
class lies under one branch of the tree: ``PrometheusUnavailable`` (retry later), ``QueryRejected``
(this query cannot be answered), ``InvalidName``/``InvalidWindow`` (fix the input).
"""

from __future__ import annotations

from bottleneck_operator.errors import NoData, Rejected, Unavailable, UsageError

__all__ = [
    "AnswerTooLarge",
    "InvalidName",
    "InvalidSeries",
    "InvalidWindow",
    "NoData",
    "PrometheusUnavailable",
    "QueryRejected",
    "QueryTimeout",
    "not_prometheus",
    "refused_for_every_query",
]

# Statuses that no other query, and no smaller batch, can pass either: the credentials or the proxy's
# are wrong for every query (RFC 9110: 401, 403, 407).
_CREDENTIALS_REFUSED = frozenset({401, 403, 407})


# The status a refusal carries when the server answered but not with Prometheus JSON (the client raises
# it with the answer's own 200).
_ANSWERED = 200


def not_prometheus(status: int | None) -> bool:
    """The refusal of an answer that came (HTTP 200) but is no Prometheus JSON, as an authenticating
    proxy's login page."""
    return status == _ANSWERED


def refused_for_every_query(status: int | None) -> bool:
    """A refusal that is the endpoint's, not one query's: credentials refused, or no Prometheus answering
    (:func:`not_prometheus`)."""
    return status in _CREDENTIALS_REFUSED or not_prometheus(status)


class PrometheusUnavailable(Unavailable):
    """Prometheus could not be reached or kept failing (refused, DNS, TLS, timeout, 5xx) after retries."""


class QueryTimeout(PrometheusUnavailable):
    """A query got no whole answer within ``prometheus_timeout`` seconds of wall-clock time, retries included.

    The deadline covers connecting, waiting and reading the body: an answer that trickles in slowly
    breaches it as surely as one that never starts.
    """

    limit = "deadline"


class QueryRejected(Rejected):
    """Prometheus answered, but refused the query (4xx) or the answer is not Prometheus JSON."""

    @property
    def for_every_query(self) -> bool:
        """The endpoint's refusal, not this query's (:func:`refused_for_every_query`)."""
        return refused_for_every_query(self.status)


class AnswerTooLarge(QueryRejected):
    """An answer over the byte or series cap (``prometheus_max_answer_bytes``/``_series``): not read further.

    Attributes:
        limit: ``"bytes"`` or ``"series"``, the cap that was breached.
    """

    def __init__(self, message: str, *, limit: str, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.limit = limit


class InvalidSeries(QueryRejected):
    """An answer that is Prometheus JSON but holds a series no Prometheus writes (a label value that is
    not a string, a sample that is not a ``[time, "value"]`` pair).

    Attributes:
        series: the offending series' labels as PromQL would print them, for the report's condition.
    """

    def __init__(self, message: str, *, series: str, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.series = series


class InvalidName(UsageError):
    """A namespace/Job/label name that cannot be one: refused before any query is built."""


class InvalidWindow(UsageError):
    """A time window that cannot be queried (end before start, not a finite time)."""
