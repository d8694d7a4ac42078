"""The one HTTP client to a PromQL API: auth, TLS, headers, timeouts, retries, own errors.

Built on prometheus-api-client's :class:`PrometheusConnect` over a :class:`requests.Session` that
this module configures (CA bundle or no verification, basic auth, extra headers such as
``X-Scope-OrgID``). Only the standard HTTP API (``/api/v1/query``, ``/api/v1/query_range``,
``/-/ready`` is not assumed) is used, so Thanos Query, Mimir, VictoriaMetrics and friends work too.

Long queries (a batched selector over a thousand Jobs easily exceeds what proxies accept in a URL)
are sent as a form-encoded POST, which Prometheus accepts on both query endpoints; the library's own
POST mode would still put the parameters in the URL, so those requests go through the same session
directly.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast
from urllib.parse import urlencode, urlsplit, urlunsplit

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException
from prometheus_api_client.prometheus_connect import PrometheusConnect
from urllib3.util.retry import Retry

from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry.errors import (
    InvalidWindow,
    PrometheusUnavailable,
    QueryRejected,
    QueryTimeout,
)
from bottleneck_operator.telemetry.matrix import Matrix, decode_matrix

log = logging.getLogger(__name__)

# Above this many bytes of encoded parameters a query is POSTed: 4 KiB stays well under the
# URL limits of common proxies and ingress controllers (often 8 KiB for the whole request line).
GET_LIMIT = 4096
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_T = TypeVar("_T")

Result = list[dict[str, Any]]


class _Retryable(Exception):
    """Internal: a failure worth another attempt; carries the error to raise if none is left."""

    def __init__(self, error: BottleneckError) -> None:
        super().__init__(str(error))
        self.error = error


def _redact(url: str) -> str:
    """The URL without user:password, for messages."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class PrometheusClient:
    """Queries one PromQL endpoint with the connection settings of :class:`Settings`.

    Attributes:
        queries_issued: HTTP queries sent so far (retries not counted): the batching contract is
            that one pass over N Jobs issues a number of queries that does not depend on N.
    """

    def __init__(self, settings: Settings) -> None:
        """Configure the session; no request is made here.

        Args:
            settings: connection settings (``prometheus_*``).
        """
        self.settings = settings
        self.base_url = settings.prometheus_url.rstrip("/")
        self.display_url = _redact(self.base_url)
        self.queries_issued = 0
        self._lock = threading.Lock()
        session = requests.Session()
        if settings.prometheus_insecure_skip_verify:
            session.verify = False
        elif settings.prometheus_ca_file is not None:
            session.verify = str(settings.prometheus_ca_file)
        auth: tuple[str, str] | None = None
        if settings.prometheus_username is not None:
            password = settings.prometheus_password.get_secret_value() if settings.prometheus_password else ""
            auth = (settings.prometheus_username, password)
        self._session = session
        # Retries are ours (bounded, with backoff, on our error types): the adapter makes one attempt.
        self._prom = PrometheusConnect(
            url=self.base_url,
            headers={},  # set per query: the token file is re-read each time
            retry=Retry(total=0, read=False, raise_on_status=False),  # read=False: a read timeout stays a Timeout
            auth=auth,  # type: ignore[arg-type]  # annotated as a tuple, None means no auth
            session=session,
            timeout=settings.prometheus_timeout,  # type: ignore[arg-type]  # annotated int, a float works
        )

    # --- public API

    def query(self, promql: str, at: float) -> Result:
        """An instant query.

        Args:
            promql: the expression.
            at: evaluation time, unix seconds.

        Returns:
            Prometheus's ``data.result`` list (for a vector: dicts with ``metric`` and ``value``).

        Raises:
            PrometheusUnavailable: unreachable, timed out or 5xx after the configured retries.
            QueryRejected: rejected (4xx) or an answer that is not Prometheus JSON.
        """
        params = {"query": promql, "time": _fmt_time(at)}
        return self._run("query", params, lambda: self._prom.custom_query(promql, params={"time": params["time"]}))

    def query_range(self, promql: str, start: float, end: float, step: float) -> Result:
        """A range query.

        Args:
            promql: the expression.
            start: first evaluation time, unix seconds.
            end: last evaluation time, unix seconds.
            step: seconds between evaluations.

        Returns:
            Prometheus's ``data.result`` list (dicts with ``metric`` and ``values``).

        Raises:
            PrometheusUnavailable: unreachable, timed out or 5xx after the configured retries.
            QueryRejected: rejected (4xx) or an answer that is not Prometheus JSON.
        """
        params = {"query": promql, "start": _fmt_time(start), "end": _fmt_time(end), "step": _fmt_time(step)}

        def via_library() -> Any:
            return self._prom.custom_query_range(
                promql,
                start_time=datetime.fromtimestamp(start, UTC),
                end_time=datetime.fromtimestamp(end, UTC),
                step=params["step"],
            )

        # The library rounds start/end to whole seconds: use it only when that changes nothing.
        integral = float(start).is_integer() and float(end).is_integer()
        return self._run("query_range", params, via_library if integral else None)

    def query_range_matrix(self, promql: str, start: float, end: float, step: float) -> Matrix:
        """A range query whose answer is decoded straight onto its step grid (see :mod:`.matrix`).

        The pass's signal queries use this: their answers are large, and a dense float matrix
        costs a small fraction of the memory and time of Prometheus's JSON as Python objects.

        Args:
            promql: the expression.
            start: first evaluation time, unix seconds.
            end: last evaluation time, unix seconds.
            step: seconds between evaluations.

        Returns:
            The answer's series labels and values (NaN where a series has no sample).

        Raises:
            PrometheusUnavailable: unreachable, timed out or 5xx after the configured retries.
            QueryRejected: rejected (4xx) or an answer that is not a Prometheus matrix.
        """
        params = {"query": promql, "start": _fmt_time(start), "end": _fmt_time(end), "step": _fmt_time(step)}
        with self._lock:
            self.queries_issued += 1
        headers = self._headers()

        def attempt() -> Matrix:
            return cast(
                Matrix,
                self._checked(
                    "query_range",
                    lambda: decode_matrix(self._send("query_range", params, headers), start, end, step),
                    Matrix,
                ),
            )

        return self._with_retries("query_range", attempt)

    def check(self) -> None:
        """Prove that the endpoint answers PromQL (an instant ``vector(1)``).

        Raises:
            PrometheusUnavailable: it does not (the message says why).
            QueryRejected: it answers, but not like a PromQL API.
        """
        self.query("vector(1)", time.time())

    def close(self) -> None:
        """Release the HTTP connections."""
        self._session.close()

    # --- internals

    def _headers(self) -> dict[str, str]:
        # Uncompressed by default: compressing tens of MB per pass is a good part of Prometheus's
        # CPU, and the operator usually runs next to it (prometheus_compression turns it on).
        encoding = "gzip" if self.settings.prometheus_compression else "identity"
        headers = {"Accept": "application/json", "Accept-Encoding": encoding, **self.settings.prometheus_headers}
        token_file = self.settings.prometheus_bearer_token_file
        if token_file is not None:
            # Re-read on every query: projected service-account tokens rotate under a running process.
            try:
                token = token_file.read_text().strip()
            except OSError as exc:
                raise PrometheusUnavailable(f"cannot read the bearer token file {token_file}: {exc}") from exc
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _run(self, endpoint: str, params: dict[str, str], via_library: Callable[[], Any] | None) -> Result:
        with self._lock:
            self.queries_issued += 1
        headers = self._headers()
        self._prom.headers = headers
        encoded_size = len(urlencode(params))
        use_library = via_library is not None and encoded_size <= GET_LIMIT

        def attempt() -> Result:
            if use_library and via_library is not None:
                return cast(Result, self._checked(endpoint, via_library))
            return cast(Result, self._checked(endpoint, lambda: self._result(endpoint, params, headers)))

        return self._with_retries(endpoint, attempt)

    def _send(self, endpoint: str, params: dict[str, str], headers: dict[str, str]) -> bytes:
        """One request (GET, or a form POST when the parameters are long); returns the 200 body."""
        url = f"{self.base_url}/api/v1/{endpoint}"
        timeout = self.settings.prometheus_timeout
        # Encoded once: a pass's selectors run to tens of KB, and quoting them is pure-Python work.
        encoded = urlencode(params)
        if len(encoded) <= GET_LIMIT:
            response = self._session.get(f"{url}?{encoded}", headers=headers, auth=self._prom.auth, timeout=timeout)
        else:
            form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
            response = self._session.post(url, data=encoded, headers=form, auth=self._prom.auth, timeout=timeout)
        if response.status_code != 200:
            raise PrometheusApiClientException(f"HTTP Status Code {response.status_code} ({response.content!r})")
        return response.content

    def _result(self, endpoint: str, params: dict[str, str], headers: dict[str, str]) -> Any:
        """One request through :meth:`_send`; returns the answer's ``data.result``."""
        body = json.loads(self._send(endpoint, params, headers))
        if not isinstance(body, dict) or body.get("status") != "success":
            raise ValueError("not a successful Prometheus answer")
        return body["data"]["result"]

    def _checked(self, endpoint: str, call: Callable[[], Any], expected: type = list) -> Any:
        """One attempt; every library failure becomes ours, retryable ones wrapped in _Retryable."""
        where = f"{self.display_url}/api/v1/{endpoint}"
        try:
            result = call()
        except requests.exceptions.Timeout as exc:
            raise _Retryable(
                _chain(
                    QueryTimeout(f"Prometheus at {where} did not answer within {self.settings.prometheus_timeout:g}s"),
                    exc,
                )
            ) from exc
        except requests.exceptions.SSLError as exc:
            raise PrometheusUnavailable(f"TLS error talking to Prometheus at {where}: {exc}") from exc
        except requests.exceptions.ConnectionError as exc:
            raise _Retryable(
                _chain(PrometheusUnavailable(f"cannot connect to Prometheus at {where}: {_short(exc)}"), exc)
            ) from exc
        except json.JSONDecodeError as exc:  # requests' own JSONDecodeError is one too
            raise QueryRejected(f"Prometheus at {where} answered with malformed JSON: {exc}") from exc
        except PrometheusApiClientException as exc:
            status, detail = _parse_status(str(exc))
            error: BottleneckError
            if status in _RETRY_STATUS:
                error = PrometheusUnavailable(f"Prometheus at {where} answered HTTP {status}: {detail}")
                raise _Retryable(_chain(error, exc)) from exc
            if status in (401, 403):
                raise QueryRejected(f"Prometheus at {where} refused the credentials (HTTP {status}): {detail}") from exc
            raise QueryRejected(f"Prometheus at {where} rejected the query (HTTP {status}): {detail}") from exc
        except requests.exceptions.RequestException as exc:
            raise PrometheusUnavailable(f"request to Prometheus at {where} failed: {_short(exc)}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise QueryRejected(f"the answer of {where} is not a Prometheus API response ({exc!r})") from exc
        if not isinstance(result, expected):
            raise QueryRejected(f"the answer of {where} has no result list")
        return result

    def _with_retries(self, endpoint: str, attempt: Callable[[], _T]) -> _T:
        retries = self.settings.prometheus_retries
        delay = self.settings.prometheus_retry_backoff
        for n in range(retries + 1):
            try:
                return attempt()
            except _Retryable as exc:
                if n == retries:
                    raise exc.error from exc.error.__cause__
                log.warning("%s (attempt %d of %d), retrying in %.2fs", exc.error, n + 1, retries + 1, delay)
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def _chain(error: BottleneckError, cause: BaseException) -> BottleneckError:
    error.__cause__ = cause
    return error


def _short(exc: BaseException | str) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:300] + "..."


def _parse_status(message: str) -> tuple[int, str]:
    """(status, Prometheus's error text) from the library's 'HTTP Status Code N (b'...')' message."""
    status = 0
    head, _, rest = message.partition("(")
    digits = "".join(ch for ch in head if ch.isdigit())
    if digits:
        status = int(digits)
    detail = rest.rstrip(")")
    # The body is a bytes repr; pull Prometheus's own "error" field out of it when it is JSON.
    if detail.startswith(("b'", 'b"')):
        detail = detail[2:-1]
    try:
        body = json.loads(detail.encode().decode("unicode_escape"))
        if isinstance(body, dict) and "error" in body:
            detail = f"{body.get('errorType', 'error')}: {body['error']}"
    except (ValueError, UnicodeDecodeError):
        pass
    return status, _short(detail)


def _fmt_time(value: float) -> str:
    if not math.isfinite(value):
        raise InvalidWindow(f"not a finite time: {value}")
    return f"{value:.3f}".rstrip("0").rstrip(".")
