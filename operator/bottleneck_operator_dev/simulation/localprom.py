"""A real, local Prometheus (Debian's) over backfilled OpenMetrics, plus a real node-exporter (:mod:`.nodeexporter`).

Used by ``demo``, ``evaluate``, the benchmarks and the tests: the data layer is always exercised
against the genuine PromQL engine, never a stand-in. The OpenMetrics text is turned into TSDB
blocks with ``promtool tsdb create-blocks-from openmetrics``; Prometheus then serves those blocks
and, optionally, scrapes live targets (a simulated job's exporters, a node-exporter).

Prometheus 2.39+ merges overlapping blocks on its own (vertical compaction is always on), so
backfilled blocks need no extra flag on the 2.42 that Debian ships. Retention is set far beyond any
backfilled range so that old simulated data is not deleted at start-up.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from bottleneck_operator.httpclient import simple_request
from bottleneck_operator_dev.simulation.nodeexporter import NODE_EXPORTER_COLLECTORS, NodeExporter
from bottleneck_operator_dev.simulation.processes import (
    LOG_TAIL,
    LocalPrometheusError,
    binaries_available,
    find_binary,
    free_port,
    hostname,
    launch_on_free_port,
    stop_process,
)

# Callers import the process helpers and the node-exporter from here too.
__all__ = [
    "NODE_EXPORTER_COLLECTORS",
    "LocalPrometheus",
    "LocalPrometheusError",
    "NodeExporter",
    "backfill",
    "binaries_available",
    "find_binary",
    "free_port",
    "hostname",
]


def backfill(openmetrics: Path, tsdb_dir: Path, *, timeout: float = 900.0) -> None:
    """Write TSDB blocks for an OpenMetrics file with promtool.

    Args:
        openmetrics: the input; must end with ``# EOF`` and carry timestamps (seconds).
        tsdb_dir: the Prometheus storage directory that receives the blocks.
        timeout: seconds before promtool is abandoned.

    Raises:
        LocalPrometheusError: promtool is missing or rejected the input (its output is quoted).
    """
    promtool = find_binary("promtool")
    tsdb_dir.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(openmetrics), str(tsdb_dir)],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LocalPrometheusError(f"promtool backfill of {openmetrics} took over {timeout:.0f}s") from exc
    if done.returncode != 0:
        out = (done.stdout + done.stderr).decode(errors="replace")[-LOG_TAIL:]
        raise LocalPrometheusError(f"promtool could not backfill {openmetrics}:\n{out}")


def _scrape_config(
    targets: Mapping[str, Sequence[str]], interval: float, extra: Sequence[Mapping[str, Any]] = ()
) -> str:
    """Prometheus YAML with one static scrape job per name; targets are URLs or host:port.

    ``extra`` scrape configs are added as they are given (Prometheus's own keys), e.g. a job that
    relabels as a PodMonitor does, with the ``__meta_kubernetes_*`` labels Kubernetes service
    discovery would give its targets set as static labels.
    """
    lines = [
        "global:",
        f"  scrape_interval: {interval:g}s",
        f"  scrape_timeout: {max(1.0, min(10.0, interval * 0.8)):g}s",
        f"  evaluation_interval: {interval:g}s",
        "scrape_configs:",
    ]
    for name, urls in targets.items():
        # Targets of one name may differ in scheme or path: each pair gets its own scrape job.
        groups: dict[tuple[str, str], list[str]] = {}
        for url in urls:
            parts = urlsplit(url if "://" in url else f"http://{url}")
            groups.setdefault((parts.scheme or "http", parts.path or "/metrics"), []).append(parts.netloc)
        for i, ((scheme, path), hosts) in enumerate(sorted(groups.items())):
            job = name if i == 0 else f"{name}-{i}"
            lines += [
                f"  - job_name: {_yaml_str(job)}",
                "    honor_labels: true",  # exporters' own namespace/pod labels win, as PodMonitors set it
                f"    scheme: {scheme}",
                f"    metrics_path: {_yaml_str(path)}",
                "    static_configs:",
                "      - targets: [" + ", ".join(_yaml_str(h) for h in hosts) + "]",
            ]
    # JSON is YAML (flow style): each extra scrape config is one line, whatever it holds.
    lines += [f"  - {json.dumps(config)}" for config in extra]
    if not targets and not extra:
        lines[-1] = "scrape_configs: []"
    return "\n".join(lines) + "\n"


def _yaml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class LocalPrometheus:
    """Debian's Prometheus on 127.0.0.1:<free port>, over a workdir of its own.

    Use as a context manager or call :meth:`start` / :meth:`stop`. ``url`` is the base URL of the
    HTTP API. The process log is ``<workdir>/prometheus.log`` and is quoted in start-up errors.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        scrape_targets: Mapping[str, Sequence[str]] | None = None,
        scrape_interval: float = 15.0,
        lookback_delta: str = "5m",
        retention: str = "3650d",
        start_timeout: float = 60.0,
        scrape_configs: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Prepare (not start) a Prometheus.

        Args:
            workdir: directory for the TSDB (``data/``), config and log; created if missing.
            scrape_targets: job name -> list of ``http://host:port/path`` URLs or ``host:port``.
            scrape_interval: seconds between scrapes of live targets.
            lookback_delta: how far back an instant selector looks (Prometheus's default, 5m).
            retention: TSDB retention; long, so backfilled history survives start-up.
            start_timeout: seconds to wait for ``/-/ready``.
            scrape_configs: further scrape jobs in Prometheus's own terms (relabelling, honor_labels).
        """
        self.workdir = Path(workdir)
        self.scrape_configs = list(scrape_configs)
        self.data_dir = self.workdir / "data"
        self.config_path = self.workdir / "prometheus.yml"
        self.log_path = self.workdir / "prometheus.log"
        self.scrape_targets: dict[str, list[str]] = {k: list(v) for k, v in (scrape_targets or {}).items()}
        self.scrape_interval = scrape_interval
        self.lookback_delta = lookback_delta
        self.retention = retention
        self.start_timeout = start_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def from_openmetrics(
        cls,
        path_or_text: str | Path | None,
        *,
        workdir: Path,
        scrape_targets: Mapping[str, Sequence[str]] | None = None,
        scrape_interval: float = 15.0,
        lookback_delta: str = "5m",
        scrape_configs: Sequence[Mapping[str, Any]] = (),
    ) -> LocalPrometheus:
        """Backfill OpenMetrics into a fresh TSDB and start Prometheus over it.

        Args:
            path_or_text: a file path (``Path``, or a ``str`` without newlines), the OpenMetrics text
                itself, or None for an empty TSDB (live targets only).
            workdir: the Prometheus's own directory.
            scrape_targets: live targets, as for :class:`LocalPrometheus`.
            scrape_interval: seconds between scrapes of live targets.
            lookback_delta: instant-selector lookback.
            scrape_configs: further scrape jobs, as for :class:`LocalPrometheus`.

        Returns:
            A started, ready LocalPrometheus (stop it, or use it as a context manager).

        Raises:
            LocalPrometheusError: binaries missing, bad OpenMetrics, or Prometheus not ready in time.
        """
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        prom = cls(
            workdir,
            scrape_targets=scrape_targets,
            scrape_interval=scrape_interval,
            lookback_delta=lookback_delta,
            scrape_configs=scrape_configs,
        )
        find_binary("prometheus")  # fail on a missing binary before the (possibly long) backfill
        if path_or_text is not None:
            if isinstance(path_or_text, str) and "\n" in path_or_text:
                source = workdir / "input.om"
                source.write_text(path_or_text)
            else:
                source = Path(path_or_text)
                if not source.is_file():
                    raise LocalPrometheusError(f"OpenMetrics file not found: {source}")
            backfill(source, prom.data_dir)
        prom.start()
        return prom

    @property
    def url(self) -> str:
        """Base URL of the HTTP API, e.g. ``http://127.0.0.1:40123``."""
        if self.port is None:
            raise LocalPrometheusError("Prometheus is not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The Prometheus process id while it runs."""
        return self._proc.pid if self.running and self._proc is not None else None

    def start(self) -> None:
        """Start Prometheus and wait until ``/-/ready`` answers.

        Raises:
            LocalPrometheusError: it exited or was not ready in time; the log's tail is in the message.
        """
        binary = find_binary("prometheus")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(_scrape_config(self.scrape_targets, self.scrape_interval, self.scrape_configs))
        self._proc, self.port = launch_on_free_port(
            "Prometheus",
            lambda port: [
                binary,
                f"--config.file={self.config_path}",
                f"--storage.tsdb.path={self.data_dir}",
                f"--storage.tsdb.retention.time={self.retention}",
                f"--web.listen-address=127.0.0.1:{port}",
                f"--query.lookback-delta={self.lookback_delta}",
                "--web.enable-lifecycle",
                "--log.level=info",
            ],
            ready_url=lambda port: f"http://127.0.0.1:{port}/-/ready",
            log_path=self.log_path,
            cwd=self.workdir,
            timeout=self.start_timeout,
        )

    def reload_targets(self, scrape_targets: Mapping[str, Sequence[str]], *, timeout: float = 15.0) -> None:
        """Replace the live scrape targets and reload the configuration in place.

        Args:
            scrape_targets: job name -> target URLs, as for the constructor.
            timeout: seconds to wait for the reload to be acknowledged.

        Raises:
            LocalPrometheusError: Prometheus is not running or refused the new configuration.
        """
        if not self.running:
            raise LocalPrometheusError("Prometheus is not running")
        self.scrape_targets = {k: list(v) for k, v in scrape_targets.items()}
        self.config_path.write_text(_scrape_config(self.scrape_targets, self.scrape_interval, self.scrape_configs))
        try:
            status, body = simple_request("POST", f"{self.url}/-/reload", timeout=timeout)
        except OSError as exc:
            raise LocalPrometheusError(f"Prometheus refused the new scrape config: {exc}") from exc
        if not 200 <= status < 300:
            detail = body.decode(errors="replace")[:500]
            raise LocalPrometheusError(f"Prometheus refused the new scrape config (HTTP {status}): {detail}")

    def stop(self) -> None:
        """Stop Prometheus: terminate, wait, kill if it lingers. Idempotent."""
        stop_process(self._proc)
        self._proc = None

    def __enter__(self) -> LocalPrometheus:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        # A forgotten instance must not leave a Prometheus behind when the interpreter exits.
        with contextlib.suppress(Exception):
            if self._proc is not None and self._proc.poll() is None:
                self._proc.send_signal(signal.SIGTERM)
