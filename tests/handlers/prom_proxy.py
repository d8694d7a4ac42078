"""A pass-through HTTP proxy in front of a real Prometheus that can be switched "down" (503).

Every answer while up is the real Prometheus's; down, it answers 503 like an overloaded or
restarting server. This is the deliberately misbehaving server of the fault test, nothing more.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.server.down:
            self.send_response(503)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"service unavailable")
            return
        req = urllib.request.Request(self.server.target + self.path, data=body, method=self.command)
        for key in ("Content-Type", "Accept", "Authorization"):
            if self.headers.get(key):
                req.add_header(key, self.headers[key])
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, data, ctype = resp.status, resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            status, data, ctype = exc.code, exc.read(), exc.headers.get("Content-Type", "")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _forward
    do_POST = _forward


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    target: str
    down: bool


class PromProxy:
    """``with PromProxy(prom.url) as proxy: ... proxy.down = True ...``; ``proxy.url`` to query."""

    def __init__(self, target: str) -> None:
        self._server = _ProxyServer(("127.0.0.1", 0), _Handler)
        self._server.target = target.rstrip("/")
        self._server.down = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def down(self) -> bool:
        return self._server.down

    @down.setter
    def down(self, value: bool) -> None:
        self._server.down = value

    def __enter__(self) -> PromProxy:
        self._thread.start()
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
