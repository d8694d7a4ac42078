"""The one HTTP client to a PromQL API: auth, TLS, headers, timeouts, retries, own errors.

Every query (instant, range, range decoded to a matrix, the readiness check) goes through one
:class:`~.transport.Transport` (a pooled client of :mod:`bottleneck_operator.httpclient`; CA bundle or
no verification, basic auth), as a GET, or a form POST when the parameters are long (a selector over a
thousand Jobs exceeds what proxies accept in a URL). Only ``/api/v1/query`` and ``/api/v1/query_range``
are used (``/-/ready`` is not assumed), so Thanos Query, Mimir and VictoriaMetrics work too.

The transport makes one attempt per call: retries loop here because they count whole queries
(``queries_issued`` does not grow with retries), double a configured delay, retry a POST like a GET (a
query has no side effect), keep a read timeout a :class:`QueryTimeout`, and keep the last status and
Prometheus's error text for the error finally raised. One deadline (``prometheus_timeout``) covers all
attempts, a byte cap (``max_answer_bytes``) the body and a series cap (``max_answer_series``) the
decoded answer: a breach raises :class:`QueryTimeout` or :class:`AnswerTooLarge` (naming the cap). A
series no Prometheus writes (a label value that is not a string) raises :class:`InvalidSeries`.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlencode

from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.httpclient import Policy, retryable
from bottleneck_operator.settings import PrometheusSettings, Settings, redact_url
from bottleneck_operator.telemetry.errors import (
    AnswerTooLarge,
    InvalidSeries,
    PrometheusUnavailable,
    QueryRejected,
    QueryTimeout,
)
from bottleneck_operator.telemetry.fetch.transport import (
    USER_AGENT,
    AnswerTooLong,
    Limits,
    Matrix,
    Transport,
    basic_auth,
    decode_matrix,
    malformed_series,
    url_auth,
)
from bottleneck_operator.telemetry.plan.grid import Grid, time_param

log = logging.getLogger(__name__)

# Above this many bytes of encoded parameters a query is POSTed: 4 KiB stays well under the
# URL limits of common proxies and ingress controllers (often 8 KiB for the whole request line).
GET_LIMIT = 4096
_OK = 200
_T = TypeVar("_T")

Result = list[dict[str, Any]]


class _Retryable(Exception):
    """Internal: a failure worth another attempt; carries the error to raise if none is left."""

    def __init__(self, error: BottleneckError) -> None:
        super().__init__(str(error))
        self.error = error


class HTTPStatusError(Exception):
    """An answer with an HTTP error status: the cause chained to the error this module raises."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


def _transport(config: PrometheusSettings, base_url: str) -> Transport:
    """The transport with the TLS settings; it makes one attempt per call."""
    ca_file = None if config.prometheus_ca_file is None else str(config.prometheus_ca_file)
    return Transport(
        base_url, timeout=config.prometheus_timeout, ca_file=ca_file, insecure=config.prometheus_insecure_skip_verify
    )


def _basic_auth(config: PrometheusSettings, transport: Transport) -> str | None:
    """The basic-auth header from the settings, else from user info in the URL."""
    if config.prometheus_username is not None:
        password = config.prometheus_password.get_secret_value() if config.prometheus_password else ""
        return basic_auth(config.prometheus_username, password)
    return url_auth(transport.origin)


class PrometheusClient:
    """Queries one PromQL endpoint with the connection settings (:class:`PrometheusSettings`).

    Attributes:
        settings: the connection settings in use.
        display_url: the base URL without credentials, for messages.
        queries_issued: HTTP queries sent so far (retries not counted): the batching contract is
            that one pass over N Jobs issues a number of queries that does not depend on N.
    """

    def __init__(self, settings: Settings | PrometheusSettings) -> None:
        """Configure the session; no request is made here.

        Args:
            settings: the connection settings, or all settings (only ``.prometheus`` is read).
        """
        config = settings.prometheus if isinstance(settings, Settings) else settings
        self.settings = config
        self.base_url = config.prometheus_url.rstrip("/")
        self.display_url = redact_url(self.base_url)
        self.queries_issued = 0
        self._lock = threading.Lock()
        # The project's one retry policy (which answers to retry, doubling waits), with these settings.
        self._policy = Policy(
            timeout=config.prometheus_timeout,
            retries=config.prometheus_retries,
            backoff=config.prometheus_retry_backoff,
        )
        self._transport = _transport(config, self.base_url)
        self._basic_auth = _basic_auth(config, self._transport)

    # --- public API

    def query(self, promql: str, at: float) -> Result:
        """An instant query.

        Args:
            promql: the expression.
            at: evaluation time, unix seconds.

        Returns:
            Prometheus's ``data.result`` list (for a vector: dicts with ``metric`` and ``value``).

        Raises:
            PrometheusUnavailable: unreachable, timed out or 5xx/429 after the configured retries.
            QueryRejected: rejected (4xx) or an answer that is not Prometheus JSON.
            InvalidWindow: ``at`` is not finite.
            AnswerTooLarge, InvalidSeries: see :meth:`query_matrix`.
        """
        return self._call("query", {"query": promql, "time": time_param(at)}, _result)

    def query_range(self, promql: str, start: float, end: float, step: float) -> Result:
        """A range query, answered as Prometheus's JSON.

        Args:
            promql: the expression.
            start: first evaluation time, unix seconds.
            end: no evaluation after this, unix seconds.
            step: seconds between evaluations.

        Returns:
            Prometheus's ``data.result`` list (dicts with ``metric`` and ``values``).

        Raises:
            PrometheusUnavailable: unreachable, timed out or 5xx/429 after the configured retries.
            QueryRejected: rejected (4xx) or an answer that is not Prometheus JSON.
            InvalidWindow: a time that is not finite, a step under a millisecond, or end before start.
            AnswerTooLarge, InvalidSeries: see :meth:`query_matrix`.
        """
        grid = Grid.query(start, end, step)
        return self._call("query_range", {"query": promql, **grid.params()}, _result)

    def query_matrix(self, promql: str, grid: Grid) -> Matrix:
        """A range query over ``grid``, decoded straight onto it (see :func:`.transport.decode_matrix`).

        The pass's queries use this: their answers are large, and a dense float matrix costs a small
        fraction of the memory and time of Prometheus's JSON as Python objects.

        Args:
            promql: the expression.
            grid: the evaluation instants; column ``k`` of the answer is instant ``k``.

        Returns:
            The answer's series labels and values (NaN where a series has no sample).

        Raises:
            PrometheusUnavailable: unreachable, or 5xx/429 after the configured retries.
            QueryTimeout: no whole answer within the deadline (``prometheus_timeout``), retries included.
            QueryRejected: rejected (4xx) or an answer that is not a Prometheus matrix.
            AnswerTooLarge: the answer is over ``max_answer_bytes`` or ``max_answer_series``.
            InvalidSeries: a series in the answer has labels no Prometheus writes.
        """
        return self._call("query_range", {"query": promql, **grid.params()}, lambda body: decode_matrix(body, grid))

    def query_range_matrix(self, promql: str, start: float, end: float, step: float) -> Matrix:
        """:meth:`query_matrix` over the range query's own grid (``Grid.query(start, end, step)``).

        Raises:
            PrometheusUnavailable / QueryRejected: as :meth:`query_matrix`.
            InvalidWindow: as :meth:`query_range`.
        """
        return self.query_matrix(promql, Grid.query(start, end, step))

    def scrape_pools(self) -> list[str]:
        """The scrape pools (jobs) this Prometheus has configured: ``/api/v1/scrape_pools`` (Prometheus >= 2.42).

        Raises:
            QueryRejected: the API serves no such endpoint (Thanos, Mimir, an older Prometheus) or answers oddly.
            PrometheusUnavailable: as :meth:`query`.
        """
        return self._call("scrape_pools", {}, _scrape_pools)

    def check(self) -> None:
        """Prove that the endpoint answers PromQL (an instant ``vector(1)``).

        Raises:
            PrometheusUnavailable: it does not (the message says why).
            QueryRejected: it answers, but not like a PromQL API.
        """
        self.query("vector(1)", time.time())

    def close(self) -> None:
        """Release the HTTP connections."""
        self._transport.close()

    # --- the one request path

    def _call(self, endpoint: str, params: dict[str, str], decode: Callable[[bytes], _T]) -> _T:
        """Send one query (with retries) and decode its 200 answer; every failure becomes ours."""
        with self._lock:
            self.queries_issued += 1
        # Encoded once for all attempts: a pass's selectors are long, and quoting them is pure-Python
        # work. The token file is read once per query, so a rotated token is picked up.
        body = self._fetch(endpoint, urlencode(params), self._headers())
        try:
            answer = decode(body)
        except (KeyError, TypeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
            kind = "malformed JSON" if isinstance(exc, json.JSONDecodeError) else "not a Prometheus API response"
            raise QueryRejected(
                f"the answer of {self._where(endpoint)} is {kind} ({_short(repr(exc))})", status=_OK
            ) from exc
        del body  # the decoded answer is all that is kept: the bytes go before the checks
        if isinstance(answer, Matrix):
            self._check_series(endpoint, answer.labels)
        elif isinstance(answer, list):
            self._check_series(endpoint, [i.get("metric") for i in answer if isinstance(i, dict)])
        return answer

    def _check_series(self, endpoint: str, series: list[Any]) -> None:
        """The series cap, and labels as Prometheus writes them (names and values strings)."""
        cap = self.settings.max_answer_series
        if len(series) > cap:
            raise AnswerTooLarge(
                f"the answer of {self._where(endpoint)} holds {len(series)} series, over the cap of {cap} "
                "(max_answer_series)",
                limit="series",
                status=_OK,
            )
        for labels in series:
            bad = malformed_series(labels)
            if bad is not None:
                raise InvalidSeries(
                    f"the answer of {self._where(endpoint)} holds a malformed series {bad}", series=bad, status=_OK
                )

    def _fetch(self, endpoint: str, encoded: str, headers: dict[str, str]) -> bytes:
        """The 200 body of one query, after at most ``prometheus_retries`` retries with doubling delays.

        All attempts share one deadline: a retry starts only when its delay ends before it.
        """
        delays = self._policy.delays()
        limits = Limits(time.monotonic() + self.settings.prometheus_timeout, self.settings.max_answer_bytes)
        for attempt, delay in enumerate(delays):
            try:
                return self._attempt(endpoint, encoded, headers, limits)
            except _Retryable as exc:
                if limits.deadline is not None and time.monotonic() + delay >= limits.deadline:
                    raise exc.error from exc.error.__cause__
                log.warning("%s (attempt %d of %d), retrying in %.2fs", exc.error, attempt + 1, len(delays) + 1, delay)
                time.sleep(delay)
        try:
            return self._attempt(endpoint, encoded, headers, limits)
        except _Retryable as exc:
            raise exc.error from exc.error.__cause__

    def _attempt(self, endpoint: str, encoded: str, headers: dict[str, str], limits: Limits) -> bytes:
        """One HTTP request: the 200 body, or our error (retryable ones wrapped in _Retryable)."""
        target = f"{self._transport.origin.path}/api/v1/{endpoint}"
        timeout = self.settings.prometheus_timeout
        try:
            if len(encoded) <= GET_LIMIT:
                answer = self._transport.request("GET", f"{target}?{encoded}", None, headers, limits)
            else:
                form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
                answer = self._transport.request("POST", target, encoded, form, limits)
        except TimeoutError as exc:
            timed_out = QueryTimeout(
                f"Prometheus at {self._where(endpoint)} gave no whole answer within the {timeout:g}s deadline"
            )
            raise _Retryable(_chain(timed_out, exc)) from exc
        except AnswerTooLong as exc:
            raise AnswerTooLarge(
                f"the answer of {self._where(endpoint)} is over {exc.cap} bytes (max_answer_bytes)", limit="bytes"
            ) from exc
        except ssl.SSLError as exc:
            raise PrometheusUnavailable(f"TLS error talking to Prometheus at {self._where(endpoint)}: {exc}") from exc
        except OSError as exc:
            error = PrometheusUnavailable(f"cannot connect to Prometheus at {self._where(endpoint)}: {_short(exc)}")
            raise _Retryable(_chain(error, exc)) from exc
        if answer.elsewhere is not None:
            raise QueryRejected(
                f"Prometheus at {self._where(endpoint)} redirects to {redact_url(answer.elsewhere)} "
                f"(HTTP {answer.status}): give that address as the Prometheus URL",
                status=answer.status,
            ) from HTTPStatusError(answer.status, answer.body)
        if answer.status >= 400:
            failed = HTTPStatusError(answer.status, answer.body)
            raise _status_error(self._where(endpoint), failed) from failed
        if answer.status != _OK:
            # A 2xx/3xx other than 200 is no query answer either.
            raise QueryRejected(
                f"Prometheus at {self._where(endpoint)} answered HTTP {answer.status}", status=answer.status
            ) from HTTPStatusError(answer.status, answer.body)
        return answer.body

    def _headers(self) -> dict[str, str]:
        # Uncompressed by default: compressing a pass's answers costs Prometheus CPU, and the operator
        # usually runs next to it (prometheus_compression turns it on for a remote endpoint).
        encoding = "gzip" if self.settings.prometheus_compression else "identity"
        headers = {
            "Accept": "application/json",
            "Accept-Encoding": encoding,
            "User-Agent": USER_AGENT,
            **self.settings.prometheus_headers,
        }
        token_file = self.settings.prometheus_bearer_token_file
        if token_file is not None:
            # Re-read on every query: projected service-account tokens rotate under a running process.
            try:
                token = token_file.read_text().strip()
            except OSError as exc:
                raise PrometheusUnavailable(f"cannot read the bearer token file {token_file}: {exc}") from exc
            headers["Authorization"] = f"Bearer {token}"
        if self._basic_auth is not None:
            headers["Authorization"] = self._basic_auth
        return headers

    def _where(self, endpoint: str) -> str:
        return f"{self.display_url}/api/v1/{endpoint}"


def _status_error(where: str, exc: HTTPStatusError) -> BottleneckError | _Retryable:
    """The error for a 4xx/5xx answer, its status as a field; 429 and 5xx wrapped to be retried."""
    status = exc.status
    detail = _error_detail(exc.body)
    if retryable(status):
        error = PrometheusUnavailable(f"Prometheus at {where} answered HTTP {status}: {detail}", status=status)
        return _Retryable(_chain(error, exc))
    if status in (401, 403):
        return QueryRejected(f"Prometheus at {where} refused the credentials (HTTP {status}): {detail}", status=status)
    return QueryRejected(f"Prometheus at {where} rejected the query (HTTP {status}): {detail}", status=status)


def _error_detail(body: bytes) -> str:
    """Prometheus's own ``errorType: error`` from an error answer's body, else the body's start."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and "error" in doc:
        return _short(f"{doc.get('errorType', 'error')}: {doc['error']}")
    return _short(body.decode("utf-8", errors="replace"))


def _result(body: bytes) -> Result:
    """``data.result`` of a successful answer (ValueError/KeyError/TypeError when there is none)."""
    doc = json.loads(body)
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise ValueError("not a successful Prometheus answer")
    result = doc["data"]["result"]
    if not isinstance(result, list):
        raise TypeError("the answer has no result list")
    return result


def _scrape_pools(body: bytes) -> list[str]:
    """``data.scrapePools`` of a successful answer (ValueError/KeyError/TypeError when there is none)."""
    doc = json.loads(body)
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise ValueError("not a successful Prometheus answer")
    pools = doc["data"]["scrapePools"]
    if not isinstance(pools, list):
        raise TypeError("the answer has no scrape pool list")
    return [str(p) for p in pools]


def _chain(error: BottleneckError, cause: BaseException) -> BottleneckError:
    error.__cause__ = cause
    return error


def _short(exc: BaseException | str) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:300] + "..."
