"""The operator's own Prometheus metrics and the tiny HTTP server that exposes them.

A private :class:`prometheus_client.CollectorRegistry` per operator instance (not the global one),
so an operator restarted in the same process (tests, ``demo``) registers its metrics afresh.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.controller.looplag import LoopLag


class OperatorMetrics:
    """Passes, pass duration, Prometheus queries, verdicts by class, errors, tracked jobs."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.passes = Counter(
            "bottleneck_operator_passes_total", "Analysis passes run.", ["kind"], registry=self.registry
        )
        self.pass_duration = Histogram(
            "bottleneck_operator_pass_duration_seconds",
            "Wall time of one analysis pass.",
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=self.registry,
        )
        self.queries = Counter(
            "bottleneck_operator_prometheus_queries_total", "PromQL queries issued.", registry=self.registry
        )
        self.verdicts = Counter(
            "bottleneck_operator_verdicts_total",
            "Verdicts written to reports, by class.",
            ["bottleneck"],
            registry=self.registry,
        )
        self.reports_by_class = Gauge(
            "bottleneck_operator_reports",
            "Tracked reports by their current verdict (None: not analysed yet).",
            ["bottleneck"],
            registry=self.registry,
        )
        self.wasted_gpu_seconds = Counter(
            "bottleneck_operator_wasted_gpu_seconds_total",
            "GPU-seconds of running profiled Jobs spent idle, (1 - GPU activity) x GPUs x time between passes, "
            "by the Job's verdict: what each bottleneck costs the cluster.",
            ["bottleneck"],
            registry=self.registry,
        )
        self.errors = Counter(
            "bottleneck_operator_errors_total",
            "Errors by where they happened (prometheus, kubernetes, analysis, deadline: a pass cancelled at it).",
            ["kind"],
            registry=self.registry,
        )
        self.jobs = Gauge(
            "bottleneck_operator_jobs", "Profiled Jobs tracked, by state.", ["state"], registry=self.registry
        )
        self.last_pass_completed = Gauge(
            "bottleneck_operator_last_pass_completed_timestamp_seconds",
            "Unix time the last analysis pass completed (the process's start until one has): the chart's "
            "BottleneckOperatorPassesStalled alert fires when it falls behind.",
            registry=self.registry,
        )
        self.last_pass_completed.set_to_current_time()
        for cls in Bottleneck:
            self.verdicts.labels(cls.value)
            self.wasted_gpu_seconds.labels(cls.value)
        for kind in ("prometheus", "kubernetes", "analysis", "deadline"):
            self.errors.labels(kind)
        # Served with the rest: the event loop's hold-ups, measured while /metrics is served.
        self.loop_lag = LoopLag(self.registry)
        self._runner: web.AppRunner | None = None

    def render(self) -> bytes:
        """The exposition text."""
        return generate_latest(self.registry)

    async def serve(self, port: int, host: str = "0.0.0.0") -> None:
        """Serve ``/metrics`` on ``host:port`` from the running event loop (0: not at all)."""
        if not port or self._runner is not None:
            return

        async def handle(_: web.Request) -> web.Response:
            return web.Response(body=self.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

        app = web.Application()
        app.router.add_get("/metrics", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        self._runner = runner
        self.loop_lag.start()

    async def stop(self) -> None:
        """Stop the HTTP server and the heartbeat (idempotent)."""
        await self.loop_lag.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
