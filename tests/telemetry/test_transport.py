"""The client's HTTP on the standard library: kept-alive connections, TLS, proxies, redirects, gzip.

Each test runs a real HTTP(S) server on a local port; the TLS certificates under tests/data/tls are a
test CA and a server certificate for 127.0.0.1 valid until 2126.
"""

from __future__ import annotations

import base64
import gzip
import json
import select
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, PrometheusUnavailable, QueryRejected

from .conftest import serving

TLS = Path(__file__).parent.parent / "data" / "tls"
T0 = 1767225600.0
VECTOR = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


@dataclass
class Seen:
    """What the server saw: request lines, headers, bodies and the client ports that connected."""

    lines: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    ports: set[int] = field(default_factory=set)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless a reply says otherwise
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "/api/v1/" not in self.path:
            # A Prometheus of a test running beside this one may scrape a port it once knew that
            # this server now holds: such a stray /metrics is not the client's and is not counted.
            self._reply(404, b"")
            return
        seen = self.server.seen
        with self.server.lock:
            seen.lines.append(f"{self.command} {self.path}")
            seen.headers.append(dict(self.headers.items()))
            seen.bodies.append(body)
            seen.ports.add(self.client_address[1])
        path = self.path.split("?")[0]
        if path.endswith("/old/api/v1/query"):
            self._reply(308, b"", location=self.path.replace("/old/", "/new/"))
        elif path.endswith("/away/api/v1/query"):
            self._reply(302, b"", location="https://prometheus.elsewhere.example:9443/api/v1/query")
        elif "gzip" in (self.headers.get("Accept-Encoding") or ""):
            self._reply(200, gzip.compress(VECTOR), encoding="gzip")
        else:
            self._reply(200, VECTOR)
        # A server that drops every kept-alive connection after one answer, without saying so.
        self.close_connection = self.server.drop_after_answer

    def _reply(self, code: int, body: bytes, location: str = "", encoding: str = "") -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if location:
            self.send_header("Location", location)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        self.wfile.write(body)

    do_GET = _serve
    do_POST = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, drop_after_answer: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.seen = Seen()
        self.drop_after_answer = drop_after_answer


@pytest.fixture
def server() -> Iterator[_Server]:
    with serving(_Server()) as srv:
        yield srv


@pytest.fixture
def tls_server() -> Iterator[_Server]:
    srv = _Server()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(TLS / "server.pem", TLS / "server.key")
    srv.socket = context.wrap_socket(srv.socket, server_side=True)
    with serving(srv):
        yield srv


def _url(srv: _Server, scheme: str = "http", prefix: str = "") -> str:
    return f"{scheme}://127.0.0.1:{srv.server_address[1]}{prefix}"


def _client(url: str, **kw: Any) -> PrometheusClient:
    return PrometheusClient(Settings(prometheus_url=url, prometheus_timeout=5.0, prometheus_retries=0, **kw))


def test_connections_are_kept_alive_between_queries(server: _Server) -> None:
    client = _client(_url(server))
    for _ in range(5):
        client.query("up", T0)
    client.query_range("up" + " or up" * 1000, T0, T0 + 60, 30)  # the POST path shares them
    assert len(server.seen.lines) == 6
    assert len(server.seen.ports) == 1
    client.close()


def test_a_connection_the_server_closed_is_replaced_without_a_retry(server: _Server) -> None:
    server.drop_after_answer = True
    client = _client(_url(server))  # no retries: the transport alone must recover
    for _ in range(3):
        client.query("up", T0)
    assert client.queries_issued == 3
    assert len(server.seen.lines) == 3  # each query sent once
    assert len(server.seen.ports) == 3


def test_concurrent_queries_each_get_a_connection(server: _Server) -> None:
    client = _client(_url(server))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                client.query("up", T0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(server.seen.lines) == 40
    assert len(server.seen.ports) <= 4
    client.close()


def test_a_path_prefix_and_a_redirect_within_it_are_followed_with_the_query(server: _Server) -> None:
    client = _client(_url(server, prefix="/old"))
    long_query = "up" + " or up" * 1000  # POSTed: the body must follow the redirect
    assert client.query(long_query, T0) == []
    assert [line.split("?")[0] for line in server.seen.lines] == ["POST /old/api/v1/query", "POST /new/api/v1/query"]
    assert server.seen.bodies[0] == server.seen.bodies[1]
    assert b"or+up" in server.seen.bodies[1]


def test_a_redirect_to_another_server_says_where_to_point(server: _Server) -> None:
    client = _client(_url(server, prefix="/away"))
    with pytest.raises(QueryRejected, match=r"redirects to https://prometheus\.elsewhere\.example:9443") as info:
        client.query("up", T0)
    assert info.value.status == 302
    assert len(server.seen.lines) == 1


def test_gzip_answers_are_decoded(server: _Server) -> None:
    assert _client(_url(server), prometheus_compression=True).query("up", T0) == []
    assert server.seen.headers[-1]["Accept-Encoding"] == "gzip"


def test_user_info_in_the_url_is_basic_auth_and_never_shown(server: _Server) -> None:
    url = _url(server).replace("http://", "http://alice:s%40cret@")
    client = _client(url)
    client.query("up", T0)
    assert server.seen.headers[-1]["Authorization"] == "Basic " + base64.b64encode(b"alice:s@cret").decode()
    assert "cret" not in client.display_url
    assert server.seen.headers[-1]["User-Agent"].startswith("bottleneck-operator/")


def test_tls_verified_against_the_given_ca(tls_server: _Server) -> None:
    client = _client(_url(tls_server, "https"), prometheus_ca_file=TLS / "ca.pem")
    assert client.query("up", T0) == []
    client.query("up", T0)
    assert len(tls_server.seen.ports) == 1  # TLS connections are kept alive too


def test_tls_unknown_ca_fails_at_once_and_says_tls(tls_server: _Server) -> None:
    client = PrometheusClient(
        Settings(prometheus_url=_url(tls_server, "https"), prometheus_retries=3, prometheus_retry_backoff=5.0)
    )
    with pytest.raises(PrometheusUnavailable, match="TLS error") as info:
        client.query("up", T0)  # not retried: the backoff would make this test take 35 s
    assert isinstance(info.value.__cause__, ssl.SSLError)


def test_tls_without_verification(tls_server: _Server) -> None:
    client = _client(_url(tls_server, "https"), prometheus_insecure_skip_verify=True)
    assert client.query("up", T0) == []


def test_plain_http_goes_through_the_environment_proxy(server: _Server, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("no_proxy", "NO_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://bob:pw@127.0.0.1:{server.server_address[1]}")
    client = _client("http://prometheus.monitoring.example:9090")
    assert client.query("up", T0) == []
    assert server.seen.lines[-1].startswith("GET http://prometheus.monitoring.example:9090/api/v1/query?")
    assert server.seen.headers[-1]["Proxy-Authorization"].startswith("Basic ")


def test_no_proxy_is_honoured(server: _Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    assert _client(_url(server)).query("up", T0) == []
    assert server.seen.lines[-1].startswith("GET /api/v1/query?")


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://prometheus:9090", "http://", "https:///api"])
def test_a_url_that_is_not_http_is_refused_by_name(url: str) -> None:
    with pytest.raises(ValidationError, match=r"prometheus_url[\s\S]*http:// or https:// URL with a host"):
        Settings(prometheus_url=url)


class _Tunnel(socketserver.BaseRequestHandler):
    """A CONNECT proxy: records the request line and credentials, then relays bytes both ways."""

    server: _TunnelServer

    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
        self.server.seen.append(lines)
        host, port = lines[0].split()[1].rsplit(":", 1)
        with socket.create_connection((host, int(port))) as upstream:
            self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            ends = [self.request, upstream]
            while True:
                ready, _, _ = select.select(ends, [], [], 5.0)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.request else self.request).sendall(data)


class _TunnelServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Tunnel)
        self.seen: list[list[str]] = []


def test_https_goes_through_the_environment_proxy_as_a_tunnel(
    tls_server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(_TunnelServer()) as proxy:
        for name in ("no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTPS_PROXY", f"http://carol:pw@127.0.0.1:{proxy.server_address[1]}")
        client = _client(_url(tls_server, "https"), prometheus_ca_file=TLS / "ca.pem")
        assert client.query("up", T0) == []
        connect = proxy.seen[-1]
        assert connect[0].startswith(f"CONNECT 127.0.0.1:{tls_server.server_address[1]} HTTP/1.")
        assert any(line.startswith("Proxy-Authorization: Basic ") for line in connect)
        assert tls_server.seen.lines[-1].startswith("GET /api/v1/query?")  # the request itself, inside TLS
        client.close()
