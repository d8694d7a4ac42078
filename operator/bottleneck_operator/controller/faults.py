"""What a failed analysis says in a report: one condition reason per kind of fault, and whether it is local.

A pass meets three kinds of fault, and each stays where it belongs:

- Prometheus is unreachable or too slow (:class:`~bottleneck_operator.errors.Unavailable`, the
  deadline included): every remaining Job of the pass keeps its last verdict, with the reason;
- Prometheus refuses the pass's credentials or is not Prometheus at all (401, 403, an HTML page):
  every Job of the batch gets the reason, with the HTTP status; a smaller batch would fare no better;
- one batch's data or answer is at fault (a malformed series, an answer over a cap, a query too
  large, a bug tripped by an odd value): the batch is split until the fault is pinned on the Jobs
  whose data cause it, and only those get the reason (``DataInvalid`` names the series).
"""

from __future__ import annotations

from bottleneck_operator.errors import BottleneckError, Rejected, Unavailable
from bottleneck_operator.telemetry.errors import (
    AnswerTooLarge,
    InvalidSeries,
    QueryTimeout,
    not_prometheus,
    refused_for_every_query,
)

__all__ = ["DATA_INVALID", "describe", "error_kind", "local"]

DATA_INVALID = "DataInvalid"
_BY_STATUS = {
    401: "PrometheusUnauthorized",
    403: "PrometheusForbidden",
    407: "PrometheusProxyUnauthorized",
    413: "QueryTooLarge",
    414: "QueryTooLarge",
    431: "QueryTooLarge",
}


def describe(exc: BaseException) -> tuple[str, str]:
    """The condition reason and message for a fault (``MetricsAvailable=False``).

    Args:
        exc: what the analysis of a batch raised.

    Returns:
        (reason, message): ``QueryDeadlineExceeded``; ``AnswerBytesExceeded`` or
        ``AnswerSeriesExceeded``; ``DataInvalid`` naming the series; for a refusal one reason per
        HTTP status (``PrometheusUnauthorized``, ``PrometheusForbidden``, ``QueryTooLarge``,
        ``NotPrometheus`` for an answer that is no Prometheus JSON, else ``QueryRejected``) with the
        status in the message; ``PrometheusUnavailable`` for the rest of the unavailable kind.
    """
    text = str(exc)
    if isinstance(exc, QueryTimeout):
        return "QueryDeadlineExceeded", text
    if isinstance(exc, AnswerTooLarge):
        return ("AnswerSeriesExceeded" if exc.limit == "series" else "AnswerBytesExceeded"), text
    if isinstance(exc, InvalidSeries):
        return DATA_INVALID, f"malformed series {exc.series}: {text}"
    if isinstance(exc, Rejected):
        status = exc.status
        if not_prometheus(status):
            return "NotPrometheus", f"HTTP {status} with no Prometheus answer: {text}"
        reason = _BY_STATUS.get(status or 0, "QueryRejected")
        return reason, (f"HTTP {status}: {text}" if status else text)
    if isinstance(exc, Unavailable):
        return "PrometheusUnavailable", text
    if isinstance(exc, BottleneckError):
        return "AnalysisFailed", text
    return DATA_INVALID, f"the Job's telemetry broke the analysis ({type(exc).__name__}: {_short(text)})"


def local(exc: BaseException) -> bool:
    """True when a smaller batch may not meet the fault: worth splitting the batch to pin it down."""
    if isinstance(exc, (InvalidSeries, AnswerTooLarge)):
        return True
    if isinstance(exc, Rejected):
        return not refused_for_every_query(exc.status)
    return not isinstance(exc, BottleneckError)


def error_kind(exc: BaseException) -> str:
    """The ``kind`` label of ``bottleneck_operator_errors_total`` for a fault."""
    if isinstance(exc, (Rejected, QueryTimeout)):
        return "prometheus"
    return "analysis"


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "..."
