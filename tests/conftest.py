"""Fixtures shared by every test folder: real Prometheus instances, node-exporter, a misbehaving server.

- ``start_prometheus(openmetrics, scrape_targets=None, scrape_interval=15.0)``: a Debian Prometheus
  over promtool-backfilled OpenMetrics (a path or the text itself), stopped at the session's end.
- ``basic_prometheus``: Prometheus over the hand-made scenario ``tests/data/basic/metrics.om``.
- ``sim_dataset``: a small fixed, seeded set of simulated jobs of every class, backfilled into a
  Prometheus (``.prom``, ``.jobs``, ``.openmetrics``); skipped only when the Prometheus binaries are missing.
- ``node_exporter``: the real prometheus-node-exporter on a loopback port.
- ``bad_server``: an HTTP server that misbehaves on purpose (``.url(mode)`` for mode in slow,
  error500, error503, error400, badjson, notprom, html, ok, midpass; ``.refused_url``; ``.hits(mode)`` and
  ``.headers(mode)`` to see what arrived) for fault tests.

Tests that need the binaries are skipped with a clear message when they are missing; ``make test``
installs them, so CI runs everything.
"""

from __future__ import annotations

import itertools
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from bottleneck_operator_dev.simulation.localprom import (
    LocalPrometheus,
    NodeExporter,
    binaries_available,
    free_port,
)

# Property tests check behaviour, never speed: a per-example deadline only measures how busy the
# shared machine is (speed is shown by bench/).
hypothesis_settings.register_profile("project", deadline=None)
hypothesis_settings.load_profile("project")

DATA = Path(__file__).parent / "data"
SIM_SEED = 20261122
SIM_START = 1767225600.0  # 2026-01-01T00:00:00Z: fixed, so every run backfills the same blocks
SIM_DURATION = 900.0
SKIP_REASON = (
    "Debian's prometheus/promtool/prometheus-node-exporter are not installed: "
    "run `make test` (it installs them) or scripts/ensure-system-deps.sh"
)

StartPrometheus = Callable[..., LocalPrometheus]


def _require_binaries() -> None:
    if not binaries_available():
        pytest.skip(SKIP_REASON)


@pytest.fixture(scope="session")
def start_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartPrometheus]:
    """A factory: ``start_prometheus(openmetrics, scrape_targets=None, scrape_interval=15.0)``."""
    _require_binaries()
    started: list[LocalPrometheus] = []
    counter = itertools.count()

    def start(
        openmetrics: str | Path | None,
        scrape_targets: Mapping[str, Sequence[str]] | None = None,
        scrape_interval: float = 15.0,
        **kwargs: Any,
    ) -> LocalPrometheus:
        workdir = tmp_path_factory.mktemp(f"prom{next(counter)}")
        prom = LocalPrometheus.from_openmetrics(
            openmetrics, workdir=workdir, scrape_targets=scrape_targets, scrape_interval=scrape_interval, **kwargs
        )
        started.append(prom)
        return prom

    yield start
    for prom in started:
        prom.stop()


@pytest.fixture(scope="session")
def basic_prometheus(start_prometheus: StartPrometheus) -> LocalPrometheus:
    """Prometheus over tests/data/basic/metrics.om (see make_basic.py there for what it holds)."""
    return start_prometheus(DATA / "basic" / "metrics.om")


@dataclass
class SimDataset:
    """Simulated jobs and the Prometheus that serves their backfilled telemetry."""

    prom: LocalPrometheus
    jobs: list[Any]  # simulation.SimulatedJob
    openmetrics: Path
    start: float
    end: float


@pytest.fixture(scope="session")
def sim_jobs() -> list[Any]:
    """Ten seeded jobs covering every verdict class (Unknown excepted), 15 minutes each."""
    from bottleneck_operator.contract.verdict import CLASSES
    from bottleneck_operator_dev.simulation import generate_jobs

    jobs: list[Any] = generate_jobs(
        SIM_SEED, 2 * len(CLASSES), start=SIM_START, duration=SIM_DURATION, classes=list(CLASSES)
    )
    return jobs


@pytest.fixture(scope="session")
def sim_dataset(
    sim_jobs: list[Any], start_prometheus: StartPrometheus, tmp_path_factory: pytest.TempPathFactory
) -> SimDataset:
    """The ``sim_jobs`` written as OpenMetrics, backfilled, served by a real Prometheus."""
    from bottleneck_operator_dev.simulation import write_openmetrics

    path = tmp_path_factory.mktemp("simdata") / "sim.om"
    with path.open("w") as out:
        write_openmetrics(sim_jobs, out)
    prom = start_prometheus(path)
    start = min(j.start for j in sim_jobs)
    end = max(j.end for j in sim_jobs)
    return SimDataset(prom=prom, jobs=sim_jobs, openmetrics=path, start=start, end=end)


@pytest.fixture(scope="session")
def node_exporter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeExporter]:
    """The real prometheus-node-exporter on 127.0.0.1:<free port> (unprivileged collectors)."""
    _require_binaries()
    with NodeExporter(tmp_path_factory.mktemp("node-exporter")) as ne:
        yield ne


class _BadHandler(BaseHTTPRequestHandler):
    """Misbehaves according to the first path segment; counts requests per mode."""

    server: _BadServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        mode = self.path.lstrip("/").split("/", 1)[0].split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.hits[mode] = self.server.hits.get(mode, 0) + 1
            self.server.last_headers[mode] = dict(self.headers.items())
        if mode == "slow":
            time.sleep(self.server.slow_seconds)
            self._reply(200, b'{"status":"success","data":{"resultType":"vector","result":[]}}')
        elif mode == "error500":
            self._reply(500, b"internal error")
        elif mode == "error503":
            self._reply(503, b"service unavailable")
        elif mode == "badjson":
            self._reply(200, b'{"status":"success","data":{"resultType":')
        elif mode == "notprom":
            self._reply(200, b'{"hello":"world"}')
        elif mode == "html":
            self._reply(200, b"<html><body>login</body></html>", ctype="text/html")
        elif mode == "error400":
            self._reply(400, b'{"status":"error","errorType":"bad_data","error":"parse error"}')
        elif mode == "midpass":
            # Pod discovery and the instant query work, every later range query fails: a server
            # that goes away in the middle of a pass.
            text = urllib.parse.unquote_plus(self.path + "&" + body.decode(errors="replace"))
            if (
                "/api/v1/query_range" in self.path
                and "created_by_kind" in text
                and "last_over_time(kube_pod_info" in text
            ):
                self._reply(200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}')
            elif "/api/v1/query_range" not in self.path:
                self._reply(200, b'{"status":"success","data":{"resultType":"vector","result":[]}}')
            else:
                self._reply(503, b"going away")
        elif mode == "ok":
            self._reply(200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}')
        else:
            self._reply(404, b"not found")

    def _reply(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests): nothing to answer

    do_GET = _serve
    do_POST = _serve


class _BadServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _BadHandler)
        self.lock = threading.Lock()
        self.hits: dict[str, int] = {}
        self.last_headers: dict[str, dict[str, str]] = {}
        self.slow_seconds = 5.0


@dataclass
class BadServer:
    """Handle on the misbehaving server: ``url(mode)`` is a Prometheus base URL that misbehaves so."""

    server: _BadServer
    refused_url: str

    def url(self, mode: str) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/{mode}"

    def hits(self, mode: str) -> int:
        with self.server.lock:
            return self.server.hits.get(mode, 0)

    def headers(self, mode: str) -> dict[str, str]:
        with self.server.lock:
            return dict(self.server.last_headers.get(mode, {}))


@pytest.fixture(scope="session")
def bad_server() -> Iterator[BadServer]:
    """Modes: slow (answers after 5 s), error500, error503, error400, badjson (truncated JSON),
    notprom (JSON without Prometheus's envelope), html, ok (empty matrix); plus a refused port."""
    server = _BadServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    refused = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    try:
        yield BadServer(server=server, refused_url=refused)
    finally:
        server.shutdown()
        server.server_close()
