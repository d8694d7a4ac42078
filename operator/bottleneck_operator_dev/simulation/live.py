"""Live exporter endpoints for simulated jobs, for a real Prometheus to scrape.

One HTTP server per endpoint (each its own port, as each real exporter is its own target):
``dcgm``, ``node-<node>`` for every node (node-exporter's ``instance`` is then the target and
``node_uname_info`` maps it to the node), ``cadvisor``, ``ksm`` and ``sidecar``. Each serves
``/metrics`` in the Prometheus text format, with the values of the jobs' state at the current time:
gauges hold the latest simulated sample, counters are interpolated between samples so they grow
smoothly. A job is visible between its start and its end. The scrape labels (``instance``, ``job``)
are left to the scraping Prometheus.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from aiohttp import web

from bottleneck_operator_dev.simulation.exporters import EXPORTER_SERIES, Series
from bottleneck_operator_dev.simulation.openmetrics import format_labels

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.record import JobRecord

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _value_at(series: Series, t: np.ndarray, now: float) -> float:
    k = int(np.searchsorted(t, now, side="right")) - 1
    k = min(max(k, 0), t.size - 1)
    v = series.values
    if series.kind in ("counter", "unknown") and k + 1 < t.size:
        frac = min(max((now - t[k]) / (t[k + 1] - t[k]), 0.0), 1.0)
        return float(v[k] + frac * (v[k + 1] - v[k]))
    return float(v[k])


class LiveExporters:
    """Serve simulated jobs' telemetry as live exporter endpoints.

    Args:
        jobs: the jobs (typically generated with ``start`` near the current time).
        clock: the wall clock (injectable for tests).
        base_port: first port to use (consecutive ports), 0 for free ports chosen by the OS.
    """

    def __init__(
        self, jobs: Sequence[JobRecord], *, clock: Callable[[], float] = time.time, base_port: int = 0
    ) -> None:
        self.jobs = list(jobs)
        self.clock = clock
        self.base_port = base_port
        self._runners: list[web.AppRunner] = []
        self._endpoints: dict[str, list[tuple[JobRecord, Series]]] = {}
        self._build()

    def _build(self) -> None:
        for name in ("dcgm", "cadvisor", "ksm", "sidecar"):
            self._endpoints[name] = []
        for job in self.jobs:
            for exporter, fn in EXPORTER_SERIES.items():
                for s in fn(job):
                    key = f"node-{_node_of(job, s)}" if exporter == "node" else exporter
                    self._endpoints.setdefault(key, []).append((job, s))

    def render(self, endpoint: str, now: float | None = None) -> str:
        """The exposition text of one endpoint at ``now`` (default: the clock)."""
        at = self.clock() if now is None else now
        by_name: dict[str, list[str]] = {}
        meta: dict[str, tuple[str, str]] = {}
        for job, s in self._endpoints.get(endpoint, []):
            if not job.start <= at <= job.end:
                continue
            t = job.state.times(s.exporter)
            value = _value_at(s, t, at)
            meta.setdefault(s.name, (s.kind, s.help))
            by_name.setdefault(s.name, []).append(f"{s.name}{format_labels(s.labels)} {value!r}\n")
        parts = []
        for name, lines in by_name.items():
            kind, text = meta[name]
            parts.append(f"# HELP {name} {text}\n# TYPE {name} {'untyped' if kind == 'unknown' else kind}\n")
            parts.extend(lines)
        return "".join(parts)

    @property
    def endpoints(self) -> list[str]:
        return list(self._endpoints)

    async def start(self, host: str = "127.0.0.1") -> dict[str, str]:
        """Start one server per endpoint.

        Args:
            host: address to bind.

        Returns:
            Endpoint name -> base URL (the metrics are at ``<base URL>/metrics``).
        """
        urls: dict[str, str] = {}
        for i, name in enumerate(self._endpoints):
            app = web.Application()
            app.router.add_get("/metrics", self._handler(name))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, host, self.base_port + i if self.base_port else 0)
            await site.start()
            self._runners.append(runner)
            server = site._server
            sockets = getattr(server, "sockets", None) or ()
            port = int(sockets[0].getsockname()[1]) if sockets else self.base_port + i
            urls[name] = f"http://{host}:{port}"
        return urls

    def _handler(self, name: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return web.Response(body=self.render(name).encode(), headers={"Content-Type": CONTENT_TYPE})

        return handle

    async def stop(self) -> None:
        """Stop every server."""
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()


def _node_of(job: JobRecord, series: Series) -> str:
    instance = series.scrape.get("instance", "")
    for nd in job.nodes:
        if nd.instance == instance:
            return nd.name
    return "unknown"
