"""Debian's headless Chromium, run once per question: a screenshot of a page, its DOM after load, its console."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SKIP_REASON = "Debian's chromium is not installed: run `make test` (it installs it) or scripts/ensure-system-deps.sh"
# Everything that would reach a network on start-up is off, so the page is the only thing loaded.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
TIMEOUT_S = 60
# Where screenshots are kept for a person to look at after the run (build/ is ignored by git).
ARTEFACTS = Path(
    os.environ.get("BOTTLENECK_TEST_ARTEFACTS", Path(__file__).resolve().parents[2] / "build" / "test-artefacts")
)
# Chromium's log line for each console message of a page: [..:INFO:CONSOLE:<line>] "<message>", source: <url> (<line>)
_CONSOLE = re.compile(r':CONSOLE(?:\(\d+\)|:\d+)\] "(.*)", source: (\S*)')
# Chromium's own services (component updates, network time, accounts) that it calls on start-up
# whatever the flags; any other host a proxy sees was asked for by the page.
OWN_HOSTS = ("google.com", "googleapis.com", "gstatic.com", "gvt1.com", "googleusercontent.com")


def chromium_binary() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip(SKIP_REASON)
    return path


class _Recorder(BaseHTTPRequestHandler):
    server: _RecordingProxy

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _record(self) -> None:
        # A proxy sees "GET http://host/path" and "CONNECT host:443": either way, the host.
        target = self.path if "://" in self.path else f"https://{self.path}"
        host = urllib.parse.urlsplit(target).hostname or self.path
        with self.server.lock:
            self.server.hosts.append(host)
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_HEAD = do_CONNECT = _record


class _RecordingProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.lock = threading.Lock()
        self.hosts: list[str] = []


@contextmanager
def recording_proxy() -> Iterator[tuple[str, list[str]]]:
    """An HTTP proxy that answers nothing and records the hosts asked for: (proxy URL, hosts)."""
    proxy = _RecordingProxy()
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}", proxy.hosts
    finally:
        proxy.shutdown()
        proxy.server_close()


def page_hosts(hosts: list[str]) -> list[str]:
    """The recorded hosts that are not Chromium's own services."""
    return [h for h in hosts if not any(h == own or h.endswith("." + own) for own in OWN_HOSTS)]


def _run(page: Path, *extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [chromium_binary(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=cwd,
            check=False,
        )


def screenshot(page: Path, png: Path, *, width: int = 1200, height: int = 2400) -> Path:
    """A PNG of the page at the given window size."""
    result = _run(page, f"--screenshot={png.resolve()}", f"--window-size={width},{height}", cwd=png.parent)
    assert png.exists(), f"chromium wrote no screenshot (rc {result.returncode}): {result.stderr[-2000:]}"
    return png


def dump_dom(page: Path, *, proxy: str | None = None) -> str:
    """The page's DOM after load, serialised; every request through ``proxy`` when given (loopback too)."""
    extra = (f"--proxy-server={proxy}", "--proxy-bypass-list=<-loopback>") if proxy else ()
    result = _run(page, *extra, "--dump-dom", cwd=page.parent)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


def keep_artefact(png: Path, name: str) -> Path:
    """Copy a screenshot to :data:`ARTEFACTS` under ``name`` and return the copy's path."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTEFACTS / name
    shutil.copyfile(png, target)
    return target


def console_messages(page: Path) -> list[str]:
    """Every console message the page caused while it loaded: errors, and the CSP's refusals among them."""
    result = _run(page, "--enable-logging=stderr", "--v=0", "--dump-dom", cwd=page.parent)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return [f"{m[1]} ({m[2]})" for m in _CONSOLE.finditer(result.stderr)]
