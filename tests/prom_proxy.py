"""A pass-through HTTP proxy in front of a real Prometheus that can be switched "down" or made to misbehave.

Every answer while up is the real Prometheus's; down, it answers 503 like an overloaded or
restarting server. ``fault`` turns on one deliberate misbehaviour at a time, for the fault tests:

- ``"slow"``: the real answer, after ``delay`` seconds of silence;
- ``"trickle"``: the real answer, a few bytes every ``delay`` seconds (a per-read timeout never fires);
- ``"html"``: a login page with status 200, as an authenticating proxy answers;
- ``"401"``, ``"403"``, ``"413"``: that status with a short text body;
- ``"padded"``: the real answer followed by ``pad`` bytes of JSON whitespace (still valid, just large);
- ``"copies"``: each range answer's first series repeated ``copies`` times (with a distinct label).

``fault_in``: with it set, the fault meets only the queries whose text holds it.

``seen``: a list to which every request's path and query (a POST's form included) is appended.

``odd_pod`` (independent of ``fault``): in every answer (with ``odd_in`` set: only in the answers to
queries whose text holds it), the series of pods whose name starts with it get a label value that is
a number, which no Prometheus writes. This is the deliberately misbehaving
server of the fault tests, nothing more.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

_KNOBS = ("down", "fault", "fault_in", "delay", "pad", "copies", "odd_pod", "odd_in", "seen")
_TEXT = {"401": b"unauthorized", "403": b"forbidden", "413": b"request entity too large"}


class _Handler(BaseHTTPRequestHandler):
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.server.seen is not None:
            self.server.seen.append(self.path + (f"?{body.decode(errors='replace')}" if body else ""))
        fault = self.server.fault
        asked = urllib.parse.unquote_plus(self.path + "&" + (body or b"").decode(errors="replace"))
        if self.server.fault_in and self.server.fault_in not in asked:
            fault = None
        if self.server.down:
            self._send(503, b"service unavailable", "text/plain")
            return
        if fault in _TEXT:
            self._send(int(fault or 0), _TEXT[fault or ""], "text/plain")
            return
        if fault == "html":
            self._send(200, b"<html><body><form>Sign in</form></body></html>", "text/html")
            return
        status, data, ctype = self._real(body)
        odd_in = self.server.odd_in
        data = self._rewrite(data, odd=not odd_in or odd_in in asked) if status == 200 else data
        if fault == "slow":
            time.sleep(self.server.delay)
        if fault == "trickle":
            self._trickle(status, data, ctype)
            return
        if fault == "padded":
            data += b" " * self.server.pad
        self._send(status, data, ctype)

    def _real(self, body: bytes | None) -> tuple[int, bytes, str]:
        req = urllib.request.Request(self.server.target + self.path, data=body, method=self.command)
        for key in ("Content-Type", "Accept", "Authorization"):
            if self.headers.get(key):
                req.add_header(key, self.headers[key])
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), exc.headers.get("Content-Type", "")

    def _rewrite(self, data: bytes, *, odd: bool) -> bytes:
        odd_pod = self.server.odd_pod if odd else None
        copies = self.server.copies if self.server.fault == "copies" else 0
        if not odd_pod and not copies:
            return data
        doc = json.loads(data)
        result = (doc.get("data") or {}).get("result")
        if not isinstance(result, list) or not result or not isinstance(result[0], dict):
            return data
        if odd_pod:
            for series in result:
                labels = series.get("metric") or {}
                if any(str(labels.get(k, "")).startswith(odd_pod) for k in ("pod", "exported_pod")):
                    labels["odd"] = 7  # a number where Prometheus always writes a string
        if copies and "values" in result[0]:
            first = result[0]
            result.extend(
                {"metric": {**first["metric"], "copy": str(i)}, "values": first["values"]} for i in range(copies)
            )
        return json.dumps(doc).encode()

    def _trickle(self, status: int, data: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(0, len(data), 16):
                self.wfile.write(data[i : i + 16])
                self.wfile.flush()
                time.sleep(self.server.delay)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up at its deadline

    def _send(self, status: int, data: bytes, ctype: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a cap or a deadline)

    do_GET = _forward
    do_POST = _forward


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    target: str
    down: bool
    fault: str | None
    delay: float
    pad: int
    copies: int
    odd_pod: str | None
    odd_in: str | None
    seen: list[str] | None


class PromProxy:
    """``with PromProxy(prom.url) as proxy: ... proxy.down = True ...``; ``proxy.url`` to query.

    Set ``proxy.fault`` (and ``delay``, ``pad``, ``copies``) or ``proxy.odd_pod`` to misbehave (see
    the module's docstring); None and "" turn them off.
    """

    def __init__(self, target: str) -> None:
        self._server = _ProxyServer(("127.0.0.1", 0), _Handler)
        self._server.target = target.rstrip("/")
        self._server.down = False
        self._server.fault = None
        self._server.fault_in = None
        self._server.delay = 1.0
        self._server.pad = 0
        self._server.copies = 0
        self._server.odd_pod = None
        self._server.odd_in = None
        self._server.seen = None
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __getattr__(self, name: str) -> Any:
        if name in _KNOBS:
            return getattr(self._server, name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _KNOBS:
            setattr(self._server, name, value)
        else:
            super().__setattr__(name, value)

    def __enter__(self) -> PromProxy:
        self._thread.start()
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
