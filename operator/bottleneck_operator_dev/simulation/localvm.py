"""A real, local VictoriaMetrics (Debian's) loaded with the same simulated data as the local Prometheus.

The scale-out backends (Thanos Query, Mimir, VictoriaMetrics) serve Prometheus's HTTP query API with
their own engines; VictoriaMetrics is the one Debian ships, so the suite checks verdicts through it
for real. Data goes in through its import API (``/api/v1/import/prometheus``), which takes the
Prometheus text format with millisecond timestamps: the OpenMetrics the simulator writes (seconds,
``# TYPE``/``# EOF`` lines) is converted line by line on the way in.

Flags that matter for a faithful comparison (VictoriaMetrics 1.79):

- ``-retentionPeriod=100y``: samples older than the retention are dropped on import, and the
  simulated data carries fixed past timestamps.
- ``-search.latencyOffset=0``: by default the newest 30 s are hidden from queries.
- ``-search.disableCache``: the rollup cache would keep answers computed before an import, and it
  also shifts range queries' start onto multiples of the step.
- ``-dedup.minScrapeInterval=1ms``: exact duplicates collapse, as in a Prometheus TSDB; nothing else.

The query-length limit (``-search.maxQueryLen``) is left at its default (16 KiB), as installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType

from bottleneck_operator.httpclient import simple_request
from bottleneck_operator_dev.simulation.localprom import LocalPrometheusError, find_binary
from bottleneck_operator_dev.simulation.processes import launch_on_free_port

BINARY = "victoria-metrics"
_CHUNK_LINES = 50_000  # lines per import request: bounded memory on both sides


def available() -> bool:
    """True when Debian's victoria-metrics is installed."""
    return shutil.which(BINARY) is not None


def to_prometheus_text(lines: Iterable[str]) -> Iterator[str]:
    """OpenMetrics sample lines as Prometheus text with millisecond timestamps (comments dropped).

    Label values may hold spaces (``modelName="NVIDIA A100"``), so the value and timestamp are the
    last two fields. A line without a timestamp is passed on unchanged (imported at "now").

    Raises:
        LocalPrometheusError: a sample line whose timestamp is not a number.
    """
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, last = line.rpartition(" ")
        series, sep2, value = head.rpartition(" ")
        if not sep or not sep2 or "}" in value or "}" in last:
            yield line
            continue
        try:
            millis = round(float(last) * 1000)
        except ValueError as exc:
            raise LocalPrometheusError(f"bad timestamp in OpenMetrics line: {line[:200]}") from exc
        yield f"{series} {value} {millis}"


class LocalVictoriaMetrics:
    """Debian's VictoriaMetrics on 127.0.0.1:<free port>, over a storage directory of its own.

    Use as a context manager or call :meth:`start` / :meth:`stop`; ``url`` is the base URL of the
    Prometheus-compatible API. The log is ``<workdir>/victoria-metrics.log``.
    """

    def __init__(self, workdir: Path, *, extra_flags: Iterable[str] = (), start_timeout: float = 60.0) -> None:
        """Prepare (not start) a VictoriaMetrics.

        Args:
            workdir: directory for the storage (``data/``) and log; created if missing.
            extra_flags: further command-line flags (e.g. ``-search.maxQueryLen=4096``).
            start_timeout: seconds to wait for ``/health``.
        """
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "victoria-metrics.log"
        self.extra_flags = list(extra_flags)
        self.start_timeout = start_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def from_openmetrics(cls, path: Path, *, workdir: Path, extra_flags: Iterable[str] = ()) -> LocalVictoriaMetrics:
        """Start VictoriaMetrics, import an OpenMetrics file and flush it so queries see all of it.

        Raises:
            LocalPrometheusError: binary missing, VictoriaMetrics not ready, or the import refused.
        """
        vm = cls(workdir, extra_flags=extra_flags)
        vm.start()
        try:
            vm.import_openmetrics(path)
        except BaseException:
            vm.stop()
            raise
        return vm

    @property
    def url(self) -> str:
        if self.port is None:
            raise LocalPrometheusError("VictoriaMetrics is not started")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start VictoriaMetrics and wait until ``/health`` answers.

        Raises:
            LocalPrometheusError: it exited or was not ready in time; the log's tail is in the message.
        """
        binary = find_binary(BINARY)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._proc, self.port = launch_on_free_port(
            "VictoriaMetrics",
            lambda port: [
                binary,
                f"-storageDataPath={self.data_dir}",
                f"-httpListenAddr=127.0.0.1:{port}",
                "-retentionPeriod=100y",
                "-search.latencyOffset=0",
                "-search.disableCache",
                "-dedup.minScrapeInterval=1ms",
                *self.extra_flags,
            ],
            ready_url=lambda port: f"http://127.0.0.1:{port}/health",
            log_path=self.log_path,
            cwd=self.workdir,
            timeout=self.start_timeout,
        )

    def import_openmetrics(self, path: Path) -> None:
        """Import a file of timestamped samples and wait until every one of them is searchable.

        Raises:
            LocalPrometheusError: the import was refused, or the samples did not reach the storage.
        """
        batch: list[str] = []
        rows = 0
        newest, oldest = 0, 0
        series: set[str] = set()
        with Path(path).open() as source:
            for line in to_prometheus_text(source):
                batch.append(line)
                head, _, stamp = line.rpartition(" ")
                if stamp.isdigit():  # a sample without one lands at the import's time, outside the search
                    series.add(head.rpartition(" ")[0])
                    newest = max(newest, int(stamp))
                    oldest = min(oldest, int(stamp)) if oldest else int(stamp)
                if len(batch) >= _CHUNK_LINES:
                    self._request("/api/v1/import/prometheus", "\n".join(batch) + "\n")
                    rows += len(batch)
                    batch.clear()
        if batch:
            self._request("/api/v1/import/prometheus", "\n".join(batch) + "\n")
            rows += len(batch)
        self._wait_stored(rows)
        self._request("/internal/force_flush", None)
        if newest:
            self._wait_searchable(newest / 1000.0, (newest - oldest) / 1000.0, len(series))

    def _wait_searchable(self, at: float, span: float, held: int, timeout: float = 30.0) -> None:
        """Wait until a search over the ``span`` seconds up to ``at`` (unix seconds) finds all ``held``
        series imported: on a busy machine the first queries after the flush found none, or only some
        (their index entries land later), and a query for one Job's series then answered empty."""
        query = urllib.parse.urlencode(
            {"match[]": '{__name__=~".+"}', "start": f"{at - span - 1:.3f}", "end": f"{at:.3f}"}
        )
        deadline = time.monotonic() + timeout
        while (found := self._count(query)) < held:
            if time.monotonic() > deadline:
                raise LocalPrometheusError(
                    f"VictoriaMetrics found {found} of the {held} imported series up to {at:.0f}, {timeout:.0f} s "
                    f"after the import (see {self.log_path})"
                )
            time.sleep(0.1)

    def _count(self, query: str) -> int:
        return len(json.loads(self._request(f"/api/v1/series?{query}", None))["data"])

    def _wait_stored(self, rows: int, timeout: float = 60.0) -> None:
        """Wait until the storage has taken ``rows`` samples: the import answers once it has read a chunk,
        and on a busy machine the last chunk's samples can reach the storage after the flush that
        should make them searchable (queries near the end of the data then find nothing)."""
        deadline = time.monotonic() + timeout
        added = self._rows_added()
        while added < rows and time.monotonic() < deadline:
            time.sleep(0.1)
            added = self._rows_added()
        if added < rows:
            raise LocalPrometheusError(
                f"VictoriaMetrics stored {added} of {rows} imported samples after {timeout:.0f} s (see {self.log_path})"
            )

    def _rows_added(self) -> int:
        for line in self._request("/metrics", None).splitlines():
            if line.startswith("vm_rows_added_to_storage_total "):
                return int(float(line.split()[1]))
        raise LocalPrometheusError(f"VictoriaMetrics at {self.url} does not report vm_rows_added_to_storage_total")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        self.port = None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)

    def __enter__(self) -> LocalVictoriaMetrics:
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- internals

    def _request(self, path: str, body: str | None) -> str:
        """POST ``body`` to ``path`` (GET without one); the answer's text."""
        data = body.encode() if body is not None else None
        try:
            status, answer = simple_request("POST" if data else "GET", f"{self.url}{path}", body=data, timeout=120)
        except OSError as exc:
            raise LocalPrometheusError(f"VictoriaMetrics at {self.url} failed on {path}: {exc}") from exc
        text = answer.decode(errors="replace")
        if not 200 <= status < 300:
            raise LocalPrometheusError(f"VictoriaMetrics refused {path} (HTTP {status}): {text[:500]}")
        return text
