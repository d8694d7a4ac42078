"""HTTP(S) to one PromQL endpoint on the standard library's ``http.client``.

``analyze`` is a one-shot command whose wall time is mostly its imports: requests, urllib3 and
charset_normalizer cost ~0.1 s at every start for what this module does in a page. It keeps
connections alive between queries (a pool of idle ones, so a pass's worker threads share them and
none outlives :meth:`Transport.close`), takes TLS settings and basic auth, goes through the proxy
that ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` name, and follows redirects within the endpoint.

Failures are the standard library's own: ``TimeoutError``, ``ssl.SSLError``, another ``OSError``
or ``http.client.HTTPException``, and :class:`AnswerTooLong` for an answer over the caller's byte cap.
A request has a wall-clock deadline, not only a timeout per socket operation: every connect, send
and read gets what is left of it, so an answer that trickles in a byte at a time ends with a
``TimeoutError`` at the deadline like one that never starts. The body is read in pieces and given up
as soon as it passes the byte cap (before it is read at all when ``Content-Length`` says so), and a
compressed body is inflated only up to the cap. The caller (:mod:`.client`) turns them into the data layer's errors
and decides what to retry; this module makes one attempt per call, except that a kept-alive
connection the server has closed in the meantime is replaced once, as any HTTP client does.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import ssl
import threading
import time
import zlib
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

from bottleneck_operator import __version__

__all__ = ["USER_AGENT", "Answer", "AnswerTooLong", "Limits", "Transport", "basic_auth", "url_auth"]

USER_AGENT = f"bottleneck-operator/{__version__}"

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_IDLE_KEPT = 16  # idle connections kept for reuse: more than a pass's concurrent queries
# A kept-alive connection the server closed while idle fails like this on the next request.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
_PIECE = 1 << 16  # bytes read at a time: the deadline and the cap are checked between pieces


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


def _tls_context(ca_file: str | None, insecure: bool) -> ssl.SSLContext:
    """The TLS context for HTTPS endpoints: the system's CAs, a given CA bundle, or no verification."""
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=ca_file)


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
        self._https = parts.scheme == "https"
        # Loading CA certificates takes a few milliseconds: only an https endpoint needs them.
        self._context = _tls_context(ca_file, insecure) if self._https else None
        self._proxy = _proxy_for(parts)
        auth = url_auth(self._proxy) if self._proxy is not None else None
        self._proxy_headers = {"Proxy-Authorization": auth} if auth else {}
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

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
            ssl.SSLError, OSError, http.client.HTTPException: as the connection fails.
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
        """Close the idle connections (those in use close when their request ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # --- connections

    def _exchange(
        self, method: str, target: str, body: str | None, headers: dict[str, str], limits: Limits
    ) -> tuple[int, bytes, str]:
        conn, reused = self._take()
        wire = target
        if self._proxy is not None and not self._https:
            wire, headers = self._url(target), {**headers, **self._proxy_headers}
        try:
            try:
                response, sock = self._send(conn, method, wire, body, headers, limits)
            except _STALE:
                if not reused:
                    raise
                conn.close()
                conn = self._connect()
                response, sock = self._send(conn, method, wire, body, headers, limits)
            data = _read_body(response, sock, limits, self.timeout)
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            self._give(conn)
        if (response.getheader("Content-Encoding") or "").lower() == "gzip":
            data = _inflate(data, limits.max_bytes)
        return response.status, data, response.getheader("Location") or ""

    def _send(
        self,
        conn: http.client.HTTPConnection,
        method: str,
        wire: str,
        body: str | None,
        headers: dict[str, str],
        limits: Limits,
    ) -> tuple[http.client.HTTPResponse, socket.socket | None]:
        """Send the request and read the status line, each within what is left of the deadline.

        Returns:
            The response, and the socket its body is read from (the connection may have dropped its
            own reference already when the server closes after this answer).
        """
        conn.timeout = limits.remaining(self.timeout)  # applies to a connect still to come
        _arm(conn.sock, conn.timeout)
        conn.request(method, wire, body=body, headers=headers)
        sock = conn.sock
        _arm(sock, limits.remaining(self.timeout))
        return conn.getresponse(), sock

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._connect(), False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < _IDLE_KEPT:
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self.origin.hostname or "", self.origin.port
        proxy = self._proxy
        if proxy is None:
            if self._https:
                return http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self._context)
            return http.client.HTTPConnection(host, port, timeout=self.timeout)
        proxy_host, proxy_port = proxy.hostname or "", proxy.port or 80
        if not self._https:
            # A plain-HTTP request goes to the proxy whole (absolute URL and proxy credentials, see _exchange).
            return http.client.HTTPConnection(proxy_host, proxy_port, timeout=self.timeout)
        conn = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=self.timeout, context=self._context)
        conn.set_tunnel(host, port or 443, headers=self._proxy_headers or None)
        return conn

    def _url(self, target: str) -> str:
        return f"{self.origin.scheme}://{self.origin.netloc.rpartition('@')[2]}{target}"


def _read_body(response: http.client.HTTPResponse, sock: socket.socket | None, limits: Limits, timeout: float) -> bytes:
    """The whole body, piece by piece, each read given what is left of the deadline; the cap checked."""
    cap = limits.max_bytes
    length = response.getheader("Content-Length")
    if cap is not None and length is not None and length.isdigit() and int(length) > cap:
        raise AnswerTooLong(cap)
    pieces: list[bytes] = []
    size = 0
    while not response.isclosed():
        _arm(sock, limits.remaining(timeout))
        # read1: what one receive brings, so a trickle is measured against the deadline piece by piece
        piece = response.read1(_PIECE)
        if not piece:
            break
        size += len(piece)
        if cap is not None and size > cap:
            raise AnswerTooLong(cap)
        pieces.append(piece)
    # read1 never marks a body of known length done: read() does (nothing is left to read), so the
    # connection can carry the next request.
    pieces.append(response.read())
    return b"".join(pieces)


def _arm(sock: socket.socket | None, seconds: float) -> None:
    """The socket's timeout for the next receive (a socket the answer has closed already needs none)."""
    if sock is not None and sock.fileno() != -1:
        sock.settimeout(seconds)


def _inflate(data: bytes, cap: int | None) -> bytes:
    """A gzip body inflated, never past the cap (a small body can inflate to gigabytes)."""
    inflater = zlib.decompressobj(wbits=31)
    if cap is None:
        return inflater.decompress(data) + inflater.flush()
    out = inflater.decompress(data, cap + 1)
    if len(out) > cap or inflater.unconsumed_tail:
        raise AnswerTooLong(cap)
    return out + inflater.flush()


def _proxy_for(origin: SplitResult) -> SplitResult | None:
    """The proxy the environment names for ``origin`` (the ``*_proxy`` variables, ``no_proxy`` honoured)."""
    if not any(name.lower() in ("http_proxy", "https_proxy", "all_proxy") for name in os.environ):
        return None
    import urllib.request  # only where a proxy is configured: the import costs what this module saves

    if urllib.request.proxy_bypass(origin.hostname or ""):
        return None
    proxies = urllib.request.getproxies()
    url = proxies.get(origin.scheme) or proxies.get("all")
    if not url:
        return None
    return urlsplit(url if "://" in url else f"http://{url}")
