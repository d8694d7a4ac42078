"""A real node-exporter (Debian's ``prometheus-node-exporter``) for tests and the demo."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from bottleneck_operator_dev.simulation.processes import (
    LocalPrometheusError,
    find_binary,
    launch_on_free_port,
    stop_process,
)

# node-exporter collectors that work without privileges and feed the node signals.
NODE_EXPORTER_COLLECTORS: tuple[str, ...] = (
    "cpu",
    "diskstats",
    "meminfo",
    "netdev",
    "pressure",
    "vmstat",
    "uname",
    "loadavg",
)


class NodeExporter:
    """Debian's ``prometheus-node-exporter`` on 127.0.0.1:<free port>, unprivileged collectors only."""

    def __init__(
        self, workdir: Path, *, collectors: Sequence[str] = NODE_EXPORTER_COLLECTORS, start_timeout: float = 30.0
    ) -> None:
        """Prepare (not start) a node-exporter.

        Args:
            workdir: where its log goes (``node-exporter.log``).
            collectors: the collectors to enable; every other collector is disabled.
            start_timeout: seconds to wait for ``/metrics``.
        """
        self.workdir = Path(workdir)
        self.log_path = self.workdir / "node-exporter.log"
        self.collectors = tuple(collectors)
        self.start_timeout = start_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port`` as Prometheus's ``instance`` label will show it."""
        if self.port is None:
            raise LocalPrometheusError("node-exporter is not started")
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The ``/metrics`` URL."""
        return f"http://{self.address}/metrics"

    def start(self) -> None:
        """Start it and wait until ``/metrics`` answers.

        Raises:
            LocalPrometheusError: missing binary, or not serving in time (log quoted).
        """
        binary = find_binary("prometheus-node-exporter")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._proc, self.port = launch_on_free_port(
            "node-exporter",
            lambda port: [
                binary,
                f"--web.listen-address=127.0.0.1:{port}",
                "--collector.disable-defaults",
                *(f"--collector.{c}" for c in self.collectors),
            ],
            ready_url=lambda port: f"http://127.0.0.1:{port}/metrics",
            log_path=self.log_path,
            cwd=self.workdir,
            timeout=self.start_timeout,
        )

    def stop(self) -> None:
        """Stop it (terminate, wait, kill). Idempotent."""
        stop_process(self._proc)
        self._proc = None

    def __enter__(self) -> NodeExporter:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
