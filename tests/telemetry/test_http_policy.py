"""The one HTTP library and its shared policy: every client the project has uses them.

Real servers on local ports; the library's own types never reach a caller, a proxy is used only
where the environment names one, and no module of the package speaks HTTP another way.
"""

from __future__ import annotations

import ast
import itertools
import socketserver
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import bottleneck_operator
from bottleneck_operator.httpclient import Policy, environment_proxy, retryable, simple_request
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, PrometheusUnavailable, QueryTimeout
from bottleneck_operator_dev.simulation.processes import http_ok

from .conftest import serving

PACKAGE = Path(bottleneck_operator.__file__).parent
T0 = 1767225600.0


class _Echo(BaseHTTPRequestHandler):
    """Answers ``/<status>`` with that status and the request's headers as the body."""

    server: _EchoServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        head = self.path.strip("/").split("/")[0]
        if head and not head.isdigit():
            # A stray scrape (/metrics) from a Prometheus of a test beside this one: not the client's.
            status = 404
        else:
            with self.server.lock:
                self.server.seen.append(dict(self.headers.items()))
            status = int(head or 200)
        body = b"\n".join(f"{k}: {v}".encode() for k, v in self.headers.items())
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _serve
    do_POST = _serve


class _EchoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.lock = threading.Lock()
        self.seen: list[dict[str, str]] = []


@pytest.fixture
def echo() -> Iterator[_EchoServer]:
    with serving(_EchoServer()) as srv:
        yield srv


def _url(srv: _EchoServer, path: str = "") -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{path}"


def test_delays_double_from_the_backoff_and_count_the_retries() -> None:
    delays = Policy(retries=4, backoff=0.25).delays()
    assert len(delays) == 4 and delays[0] == 0.25
    assert all(later == 2 * earlier for earlier, later in itertools.pairwise(delays))
    assert Policy(retries=0).delays() == []


def test_no_timeout_exceeds_what_is_left_of_a_deadline() -> None:
    policy = Policy(timeout=10.0)
    for left in (0.1, 3.0, 10.0, 60.0):
        limits = policy.timeouts(left).as_dict()
        assert all(v is not None and v <= min(10.0, left) for v in limits.values()), limits
    # A watch has no read timeout, yet an address that never answers still fails to connect.
    unbounded = Policy(timeout=None).timeouts().as_dict()
    assert unbounded["read"] is None and unbounded["connect"] is not None


def test_retryable_answers_are_the_overloaded_and_the_failing() -> None:
    assert [s for s in range(100, 600) if retryable(s)] == [429, *range(500, 600)]


@pytest.mark.parametrize("code", [429, 503, 400])
def test_prometheus_retries_exactly_what_the_policy_calls_retryable(echo: _EchoServer, code: int) -> None:
    client = PrometheusClient(
        Settings(prometheus_url=_url(echo, f"/{code}"), prometheus_retries=2, prometheus_retry_backoff=0.01)
    )
    with pytest.raises(Exception) as info:
        client.query("up", T0)
    assert isinstance(info.value, PrometheusUnavailable) is retryable(code)
    assert len(echo.seen) == (3 if retryable(code) else 1)


def test_a_simple_request_answers_status_and_body(echo: _EchoServer) -> None:
    status, body = simple_request("POST", _url(echo, "/201"), body=b"x", timeout=5.0, headers={"X-Test": "1"})
    assert status == 201 and b"X-Test: 1" in body
    assert b"Accept-Encoding: identity" in body  # the body comes back as sent, never compressed
    assert http_ok(_url(echo, "/204")) and not http_ok(_url(echo, "/503"))


def test_a_refused_connection_is_the_operating_systems_error_not_the_librarys(echo: _EchoServer) -> None:
    port = echo.server_address[1]
    echo.shutdown()
    echo.server_close()
    with pytest.raises(OSError) as info:
        simple_request("GET", f"http://127.0.0.1:{port}/", timeout=2.0)
    assert isinstance(info.value, ConnectionRefusedError)
    assert not http_ok(f"http://127.0.0.1:{port}/")


class _TrickledHeaders(socketserver.BaseRequestHandler):
    """Answers any request with a status line, then a header one byte every 0.2 s for 8 s."""

    def handle(self) -> None:
        self.request.recv(65536)
        self.request.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        try:
            for _ in range(40):
                time.sleep(0.2)
                self.request.sendall(b"a")
        except OSError:  # the client gave up: what the test expects
            return


class _TrickleServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _TrickledHeaders)


def test_the_deadline_bounds_headers_that_trickle_in() -> None:
    # Every read gets a byte well within any per-read timeout: only a deadline over all the reads
    # of the request, the headers' included, ends it.
    with serving(_TrickleServer()) as srv:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        client = PrometheusClient(Settings(prometheus_url=url, prometheus_retries=0, prometheus_timeout=1.0))
        started = time.monotonic()
        with pytest.raises(QueryTimeout):
            client.query("up", T0)
        assert time.monotonic() - started < 4.0  # the answer's headers alone would take 8 s
        client.close()


def test_a_proxy_only_where_the_environment_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    target = urlsplit("http://prometheus.monitoring:9090")
    assert environment_proxy(target) is None
    monkeypatch.setenv("HTTP_PROXY", "proxy.corp:3128")
    assert environment_proxy(target) == "http://proxy.corp:3128"
    monkeypatch.setenv("NO_PROXY", ".monitoring")
    assert environment_proxy(target) is None


def test_no_module_speaks_http_another_way() -> None:
    # The one door is httpclient (which reads the proxy variables through urllib, sending nothing).
    other = {"urllib.request", "urllib.error", "http.client", "requests", "urllib3", "aiohttp.client"}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "httpclient.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not other.intersection(names), f"{path.relative_to(PACKAGE)}:{node.lineno} imports {names}"
