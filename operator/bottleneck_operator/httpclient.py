"""The project's one HTTP library and the policy every client of it shares.

Everything the project calls over HTTP goes through httpx (the fork ``httpx2`` that lightkube uses
here): the Kubernetes client (through lightkube), the Prometheus client (:mod:`.telemetry.fetch.transport`)
and the local runners of the simulators. They share what this module fixes:

- one pooled client per target, never trusting the environment's ``.netrc`` or CA variables
  (``trust_env`` off): TLS is what the settings say, and a proxy is used only where the
  ``*_proxy`` variables name one for that target (``no_proxy`` honoured);
- redirects are not followed by the library: a client that accepts any does so itself;
- one :class:`Policy` for timeouts and retries: which answers are worth another attempt (429 and
  5xx, :func:`retryable`), how long to wait before each (doubling from ``backoff``), and the
  seconds a connect, read or write may take.
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpcore2
import httpx2

__all__ = [
    "Policy",
    "Sent",
    "async_transport",
    "deadline",
    "environment_proxy",
    "os_cause",
    "retryable",
    "sent",
    "simple_request",
    "sync_client",
    "tls_context",
]

# A connect waits this long when no timeout is set at all (a watch): an address that never answers
# must still fail.
_CONNECT_WITHOUT_TIMEOUT = 15.0


@dataclass(frozen=True)
class Policy:
    """Timeouts and retries, the same for every client.

    Attributes:
        timeout: seconds a connect, read, write or wait for a pooled connection may take (None: no
            limit, for watches; a connect still fails after 15 s).
        retries: attempts after the first for an answer :func:`retryable` says is worth it.
        backoff: seconds before the first retry, doubled before each next one.
        max_connections: connections to one target, in use or idle.
    """

    timeout: float | None = 30.0
    retries: int = 0
    backoff: float = 0.5
    max_connections: int = 64

    def timeouts(self, left: float | None = None) -> httpx2.Timeout:
        """The library's timeouts, none over ``left`` seconds (what remains of a caller's deadline)."""
        seconds = self.timeout if left is None else left if self.timeout is None else min(self.timeout, left)
        return httpx2.Timeout(seconds, connect=_CONNECT_WITHOUT_TIMEOUT if seconds is None else seconds)

    def delays(self) -> list[float]:
        """The wait before each retry, in order."""
        return [self.backoff * 2**n for n in range(self.retries)]

    def limits(self) -> httpx2.Limits:
        """The pool's size."""
        return httpx2.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_connections)


def retryable(status: int) -> bool:
    """Whether an answer with this HTTP status is worth another attempt (overloaded or failing: 429, 5xx)."""
    return status == 429 or status >= 500


def tls_context(ca_file: str | None = None, insecure: bool = False) -> ssl.SSLContext:
    """The TLS context for an https target: the system's CAs, a given CA bundle, or no verification."""
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=ca_file)


def environment_proxy(origin: SplitResult) -> str | None:
    """The proxy the environment names for ``origin`` (the ``*_proxy`` variables, ``no_proxy`` honoured)."""
    if not any(name.lower() in ("http_proxy", "https_proxy", "all_proxy") for name in os.environ):
        return None
    import urllib.request  # only where a proxy is configured: reading the variables, no request

    if urllib.request.proxy_bypass(origin.hostname or ""):
        return None
    proxies = urllib.request.getproxies()
    url = proxies.get(origin.scheme) or proxies.get("all")
    if not url:
        return None
    return url if "://" in url else f"http://{url}"


_thread = threading.local()


@contextmanager
def deadline(at: float | None) -> Iterator[None]:
    """Every connect, write and read of this thread's requests (a sync client's) ends by ``at``.

    Args:
        at: a ``time.monotonic()`` instant; None: the timeouts alone.

    A timeout bounds one socket operation; this bounds them all together, so an answer that
    trickles in a byte at a time, headers included, ends at ``at`` like one that never starts (the
    library then raises its timeout error, which :func:`sent` makes a ``TimeoutError``).
    """
    before = getattr(_thread, "deadline", None)
    _thread.deadline = at
    try:
        yield
    finally:
        _thread.deadline = before


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    at: float | None = getattr(_thread, "deadline", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose every read and write gets at most what is left of the thread's deadline."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        tls = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore2.ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    """The library's own sockets, each connect and each stream bounded by the thread's deadline."""

    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        bounded = _left(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        bounded = _left(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def sync_client(base_url: str, policy: Policy, *, verify: ssl.SSLContext | bool = True) -> httpx2.Client:
    """A pooled client for one target (scheme, host and port of ``base_url``), for callers in threads.

    Its requests honour :func:`deadline` (the calling thread's).
    """
    transport = httpx2.HTTPTransport(
        verify=verify, limits=policy.limits(), proxy=environment_proxy(urlsplit(base_url)), trust_env=False
    )
    # httpx builds its connection pool itself and takes no network backend; the pool's constructor
    # does (``network_backend``), and reads it only when it opens a connection: none is open yet.
    transport._pool._network_backend = _DeadlineBackend()
    return httpx2.Client(transport=transport, timeout=policy.timeouts(), follow_redirects=False, trust_env=False)


def async_transport(policy: Policy, *, verify: ssl.SSLContext | bool = True) -> httpx2.AsyncHTTPTransport:
    """The pooled transport of an async client (lightkube's, to the Kubernetes API)."""
    return httpx2.AsyncHTTPTransport(verify=verify, limits=policy.limits(), trust_env=False)


def os_cause(exc: BaseException) -> BaseException | None:
    """The operating system's error under a library's (a refused connection, a TLS failure), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class Sent:
    """An answer whose status and headers are in, and whose body is still to be read (:func:`sent`)."""

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.status = response.status_code

    def header(self, name: str) -> str:
        """A header's value ("" when absent), whatever its case."""
        return self._response.headers.get(name, "")

    def pieces(self) -> Iterator[bytes]:
        """The body as it arrives (compressed as sent), read by read."""
        return self._response.iter_raw()


# A kept-alive connection the server closed while idle fails like this before any answer.
_STALE = (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)


@contextmanager
def sent(
    client: httpx2.Client,
    method: str,
    url: str,
    *,
    content: str | bytes | None,
    headers: Mapping[str, str],
    timeout: httpx2.Timeout,
) -> Iterator[Sent]:
    """Send one request and hold its answer open while the caller reads the body; no library error leaves.

    A kept-alive connection the server has closed meanwhile is replaced once, as any HTTP client
    does (the server never read the request, so it is still sent once).

    Raises:
        TimeoutError: a connect, write or read took longer than ``timeout`` allows.
        OSError: the connection failed (the operating system's error, e.g. ``ssl.SSLError`` or
            ``ConnectionRefusedError``, else a ``ConnectionError``), the library's chained as its cause.
    """
    request = client.build_request(method, url, content=content, headers=dict(headers), timeout=timeout)
    try:
        try:
            response = client.send(request, stream=True)
        except _STALE:
            response = client.send(request, stream=True)
        try:
            yield Sent(response)
        finally:
            response.close()
    except httpx2.TimeoutException as exc:
        raise TimeoutError(f"no whole answer in time ({type(exc).__name__})") from exc
    except httpx2.HTTPError as exc:
        raise _os_error(exc) from exc


def _os_error(exc: httpx2.HTTPError) -> OSError:
    """The operating system's error under the library's, as a new exception of its type (raising the
    original again would chain it to itself); a ``ConnectionError`` when there is none."""
    cause = os_cause(exc)
    if isinstance(cause, OSError):
        try:
            return type(cause)(*cause.args)
        except TypeError:  # a subclass with a constructor of its own
            pass
    return ConnectionError(f"{type(exc).__name__}: {exc}")


def simple_request(
    method: str, url: str, *, body: bytes | None = None, timeout: float, headers: Mapping[str, str] | None = None
) -> tuple[int, bytes]:
    """One request on a client of its own (a local runner's few calls): the status and the body.

    Raises:
        OSError: the request failed (the operating system's error where there is one).
    """
    policy = Policy(timeout=timeout)
    asked = {"Accept-Encoding": "identity", **(headers or {})}
    with (
        sync_client(url, policy) as client,
        # Uncompressed: the body is returned as sent, and the library's default asks for gzip.
        sent(client, method, url, content=body, headers=asked, timeout=policy.timeouts()) as answer,
    ):
        return answer.status, b"".join(answer.pieces())
