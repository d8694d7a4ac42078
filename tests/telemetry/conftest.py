"""Fixtures of the data layer's tests: a server that answers every request with one HTTP status.

``status_server.url(code)`` is a Prometheus base URL whose every answer is ``code`` with
Prometheus's error envelope (``errorType: error``); ``status_server.hits(code)`` counts the requests.
It complements the shared ``bad_server`` (tests/conftest.py) with the statuses that one does not
produce (401, 403, 422, 429, 501, 502, ...).
"""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest


class _StatusHandler(BaseHTTPRequestHandler):
    server: _StatusServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        code = int(self.path.lstrip("/").split("/", 1)[0])
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with self.server.lock:
            self.server.hits[code] = self.server.hits.get(code, 0) + 1
        body = json.dumps({"status": "error", "errorType": "test", "error": f"status {code}"}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _serve
    do_POST = _serve


class _StatusServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _StatusHandler)
        self.lock = threading.Lock()
        self.hits: dict[int, int] = {}


@dataclass
class StatusServer:
    """Handle on the server: ``url(code)`` answers ``code``; ``hits(code)`` counts requests."""

    server: _StatusServer

    def url(self, code: int) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/{code}"

    def hits(self, code: int) -> int:
        with self.server.lock:
            return self.server.hits.get(code, 0)


_S = TypeVar("_S", bound=socketserver.BaseServer)


@contextmanager
def serving(server: _S) -> Iterator[_S]:
    """``server`` answering on a thread of its own, shut down and closed on the way out."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def status_server() -> Iterator[StatusServer]:
    with serving(_StatusServer()) as server:
        yield StatusServer(server)
