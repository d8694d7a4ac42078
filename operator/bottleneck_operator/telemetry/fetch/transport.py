"""HTTP(S) to one PromQL endpoint on the project's one HTTP library (:mod:`bottleneck_operator.httpclient`).

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
"""

from __future__ import annotations

import base64
import time
import zlib
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

from bottleneck_operator import __version__
from bottleneck_operator.httpclient import Policy, Sent, deadline, sent, sync_client, tls_context

__all__ = ["USER_AGENT", "Answer", "AnswerTooLong", "Limits", "Transport", "basic_auth", "url_auth"]

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
