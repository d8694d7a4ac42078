"""HTTP(S) to one PromQL endpoint on the one HTTP library (:mod:`bottleneck_operator.httpclient`), and
a range answer's body decoded onto its grid.

One pooled client per endpoint keeps connections alive between queries (a pass's worker threads
share them, and none outlives :meth:`Transport.close`), with the TLS settings, and the proxy that
``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` name for the endpoint (none otherwise). Redirects within
the endpoint are followed here, with the query; one elsewhere is returned, not followed.

Failures are the standard library's own: ``TimeoutError``, ``ssl.SSLError``, another ``OSError``
(the operating system's error under the library's, chained), and :class:`AnswerTooLong` for an
answer over the caller's byte cap. A request has a wall-clock deadline, not only a timeout per
socket operation: every connect, write and read gets at most what is left of it
(:func:`~bottleneck_operator.httpclient.deadline`), so an answer that trickles in a byte at a
time, headers included, ends with a ``TimeoutError`` at the deadline like one that never starts. The
body is given up as soon as it passes the byte cap (before it is read at all when
``Content-Length`` says so), and a compressed body is inflated only up to the cap. The caller
(:mod:`.client`) turns them into the data layer's errors and decides what to retry; this module
makes one attempt per call, except that a kept-alive connection the server has closed in the
meantime is replaced once, as any HTTP client does.

A pass over a thousand Jobs reads millions of samples. Decoded the usual way, every sample becomes
a ``[timestamp, "value"]`` list of Python objects, many times the size of the float it carries, and
all of a pass's answers are alive at once. :func:`decode_matrix` takes each series apart the moment
the JSON decoder has built it (an ``object_hook``), converts its samples to numpy in batches, and
ends with one dense float64 :class:`Matrix` on the query's :class:`~..plan.grid.Grid`: 8 bytes per
grid point. A body that is no Prometheus matrix raises the standard library's ``ValueError``,
``TypeError`` or ``KeyError``, which the client words as a rejected query, as it does a series whose
labels are not strings (:func:`malformed_series`).
"""

from __future__ import annotations

import base64
import json
import time
import zlib
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

import numpy as np

from bottleneck_operator import __version__
from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator.httpclient import Policy, Sent, deadline, sent, sync_client, tls_context
from bottleneck_operator.telemetry.plan.grid import Grid

__all__ = [
    "USER_AGENT",
    "Answer",
    "AnswerTooLong",
    "Limits",
    "Matrix",
    "Transport",
    "basic_auth",
    "decode_matrix",
    "malformed_series",
    "url_auth",
]

USER_AGENT = f"bottleneck-operator/{__version__}"

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_IDLE_KEPT = 16  # connections to one endpoint: more than a pass's concurrent queries


class AnswerTooLong(Exception):
    """An answer body over the byte cap; nothing more of it was read.

    Attributes:
        cap: the cap in bytes.
    """

    def __init__(self, cap: int) -> None:
        super().__init__(f"the answer is over {cap} bytes")
        self.cap = cap


@dataclass(frozen=True)
class Limits:
    """What one request may take: a wall-clock deadline (``time.monotonic()``) and a body size."""

    deadline: float | None = None
    max_bytes: int | None = None

    def remaining(self, timeout: float) -> float:
        """Seconds for the next socket operation: ``timeout``, or what is left of the deadline.

        Raises:
            TimeoutError: the deadline has passed.
        """
        if self.deadline is None:
            return timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        return min(timeout, left)


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: its status, its (decompressed) body, and where it redirected elsewhere."""

    status: int
    body: bytes
    elsewhere: str | None = None  # a redirect out of the endpoint (another scheme, host or port)


def basic_auth(username: str, password: str) -> str:
    """An ``Authorization`` header value for HTTP basic auth (RFC 7617, UTF-8)."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def url_auth(parts: SplitResult) -> str | None:
    """The basic-auth header from a URL's user info (``http://user:password@host``), None without."""
    if parts.username is None:
        return None
    return basic_auth(unquote(parts.username), unquote(parts.password or ""))


class Transport:
    """Requests to one endpoint (scheme, host and port of ``base_url``), connections kept alive."""

    def __init__(self, base_url: str, *, timeout: float, ca_file: str | None = None, insecure: bool = False) -> None:
        """Prepare the transport; nothing is connected here.

        Args:
            base_url: ``http(s)://host[:port][/prefix]`` (``Settings`` checks the form); user info in it
                is ignored here.
            timeout: seconds for the connection and for each read.
            ca_file: the CA bundle of an ``https`` endpoint (default: the system's CAs).
            insecure: no certificate verification for an ``https`` endpoint.
        """
        parts = urlsplit(base_url)
        self.origin = parts
        self.timeout = timeout
        self._policy = Policy(timeout=timeout, max_connections=_IDLE_KEPT)
        # Loading CA certificates takes a few milliseconds: only an https endpoint needs them.
        verify = tls_context(ca_file, insecure) if parts.scheme == "https" else True
        self._client = sync_client(base_url, self._policy, verify=verify)

    def request(
        self, method: str, target: str, body: str | None, headers: dict[str, str], limits: Limits = Limits()
    ) -> Answer:
        """Send one request and read its whole answer, following redirects within the endpoint.

        Args:
            method: ``GET`` or ``POST``.
            target: path and query (``/api/v1/query?...``) under the endpoint's origin.
            body: the form-encoded body of a POST.
            headers: request headers.
            limits: the wall-clock deadline (redirects included) and the most bytes of the body.

        Raises:
            TimeoutError: a socket operation timed out, or the deadline passed.
            AnswerTooLong: the body (inflated, when compressed) is over ``limits.max_bytes``.
            ssl.SSLError, OSError: as the connection fails.
        """
        for _ in range(MAX_REDIRECTS):
            status, data, location = self._exchange(method, target, body, headers, limits)
            if status not in _REDIRECTS or not location:
                return Answer(status, data)
            # The query is re-sent as it was: it has no side effect, and a POST turned into a body-less
            # GET (what browsers do on 301-303) would lose it.
            url = urljoin(self._url(target), location)
            moved = urlsplit(url)
            if (moved.scheme, moved.hostname, moved.port) != (
                self.origin.scheme,
                self.origin.hostname,
                self.origin.port,
            ):
                return Answer(status, data, elsewhere=url)
            target = moved.path + (f"?{moved.query}" if moved.query else "")
        return Answer(status, data)

    def close(self) -> None:
        """Close the pooled connections."""
        self._client.close()

    def _exchange(
        self, method: str, target: str, body: str | None, headers: dict[str, str], limits: Limits
    ) -> tuple[int, bytes, str]:
        timeout = self._policy.timeouts(limits.remaining(self.timeout))
        with (
            deadline(limits.deadline),
            sent(self._client, method, self._url(target), content=body, headers=headers, timeout=timeout) as answer,
        ):
            data = _read_body(answer, limits.max_bytes)
        if answer.header("Content-Encoding").lower() == "gzip":
            data = _inflate(data, limits.max_bytes)
        return answer.status, data, answer.header("Location")

    def _url(self, target: str) -> str:
        return f"{self.origin.scheme}://{self.origin.netloc.rpartition('@')[2]}{target}"


def _read_body(answer: Sent, cap: int | None) -> bytes:
    """The whole body, piece by piece, given up as soon as it passes the cap."""
    length = answer.header("Content-Length")
    if cap is not None and length.isdigit() and int(length) > cap:
        raise AnswerTooLong(cap)
    pieces: list[bytes] = []
    size = 0
    for piece in answer.pieces():  # each read bounded by the deadline (httpclient.deadline)
        size += len(piece)
        if cap is not None and size > cap:
            raise AnswerTooLong(cap)
        pieces.append(piece)
    return b"".join(pieces)


def _inflate(data: bytes, cap: int | None) -> bytes:
    """A gzip body inflated, never past the cap (a small body can inflate to gigabytes)."""
    inflater = zlib.decompressobj(wbits=31)
    if cap is None:
        return inflater.decompress(data) + inflater.flush()
    out = inflater.decompress(data, cap + 1)
    if len(out) > cap or inflater.unconsumed_tail:
        raise AnswerTooLong(cap)
    return out + inflater.flush()


# --- the answer's JSON, decoded onto the query's grid

Float2D = np.ndarray[tuple[int, int], np.dtype[np.float64]]

_FLUSH = 1 << 13  # samples converted to numpy at a time: bounds the Python objects alive at once
_SERIES = object()  # what a decoded series is replaced by in the JSON tree


@dataclass(frozen=True)
class Matrix:
    """A range answer on the query's grid.

    Attributes:
        labels: each series' labels, in answer order.
        grid: the query's evaluation instants; column ``k`` is instant ``k``.
        values: (series, columns) samples; NaN where a series has no sample.
    """

    labels: list[dict[str, str]]
    grid: Grid
    values: Float2D

    @property
    def first(self) -> int:
        """Global grid index (``time / step``) of column 0."""
        return self.grid.first

    @property
    def columns(self) -> int:
        return int(self.values.shape[1])

    def row(self, i: int) -> FloatArray:
        """Series ``i`` on the grid (a view)."""
        return cast(FloatArray, self.values[i])


class _Decoder:
    """Collects the series of one answer while ``json.loads`` builds it."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.labels: list[dict[str, str]] = []
        self._rows: list[int] = []
        self._times: list[Any] = []
        self._values: list[Any] = []
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def hook(self, obj: dict[str, Any]) -> Any:
        values = obj.get("values")
        metric = obj.get("metric")
        if not (isinstance(values, list) and isinstance(metric, dict)):
            return obj
        row = len(self.labels)
        self.labels.append(metric)  # the API's label names and values are JSON strings
        if values:
            times, samples = zip(*values, strict=True)
            self._times.extend(times)
            self._values.extend(samples)
            self._rows.extend([row] * len(times))
            if len(self._times) >= _FLUSH:
                self._flush()
        return _SERIES

    def _flush(self) -> None:
        if not self._times:
            return
        n = len(self._times)
        times = np.fromiter(self._times, dtype=np.float64, count=n)
        # float() reads Prometheus's "NaN", "+Inf" and "-Inf" as well as numbers.
        values = np.fromiter(map(float, self._values), dtype=np.float64, count=n)
        rows = np.fromiter(self._rows, dtype=np.int64, count=n)
        self._parts.append((rows, self.grid.columns(times), values))
        self._rows, self._times, self._values = [], [], []

    def matrix(self) -> Matrix:
        self._flush()
        size = self.grid.size
        out = np.full((len(self.labels), size), np.nan, dtype=np.float64)
        for rows, cols, values in self._parts:
            keep = (cols >= 0) & (cols < size)
            out[rows[keep], cols[keep]] = values[keep]
        self._parts = []
        return Matrix(labels=self.labels, grid=self.grid, values=out)


def decode_matrix(body: bytes | str, grid: Grid) -> Matrix:
    """Decode a ``/api/v1/query_range`` response body.

    Args:
        body: the HTTP body.
        grid: the query's evaluation instants (see :class:`~..plan.grid.Grid`): the matrix's columns.

    Returns:
        The answer as a matrix.

    Raises:
        ValueError, TypeError, KeyError: the body is not a successful Prometheus matrix answer
            (malformed JSON included: ``json.JSONDecodeError`` is a ValueError).
    """
    decoder = _Decoder(grid)
    doc = json.loads(body, object_hook=decoder.hook)
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise ValueError("not a successful Prometheus answer")
    data = doc["data"]
    result = data["result"] if isinstance(data, dict) else None
    if not isinstance(result, list) or any(item is not _SERIES for item in result):
        raise ValueError("the answer has no matrix result")
    return decoder.matrix()


# Labels that say whose a series is, shown first (after the malformed ones) when a series is named.
_WHOSE = ("namespace", "pod", "exported_namespace", "exported_pod", "container", "node", "instance", "gpu")
_SHOWN = 300  # characters of a series' text in a message


def malformed_series(labels: Any) -> str | None:
    """A series as text when its labels are not a mapping of strings to strings (as Prometheus writes), else None.

    The malformed labels come first, then those that say whose the series is: the text is cut short.
    """
    if isinstance(labels, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return None
    if not isinstance(labels, dict):
        return repr(labels)[:_SHOWN]
    name = labels.get("__name__")
    bad = [k for k, v in labels.items() if not (isinstance(k, str) and isinstance(v, str))]
    whose = [k for k in _WHOSE if k in labels and k not in bad]
    rest = [k for k in labels if k not in bad and k not in whose and k != "__name__"]
    inner = ", ".join(f"{k}={json.dumps(labels[k])}" for k in (*bad, *whose, *rest))
    text = f"{name if isinstance(name, str) else ''}{{{inner}}}"
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
