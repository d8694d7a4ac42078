"""The collector's process: read a snapshot every period, serve /metrics, stop on SIGTERM.

The kubelet sends SIGTERM to a native sidecar once the pod's main containers have exited; the
collector then stops at once (exit 0) so the pod, and therefore the Job, finishes without waiting
out the grace period.
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.process_collector import ProcessCollector

from bottleneck_operator.contract.names import COLLECTOR_PERIOD, COLLECTOR_PORT
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.sidecar.collector import SnapshotCollector
from bottleneck_operator.sidecar.gpu import Nvml
from bottleneck_operator.sidecar.reader import Identity, Reader

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CollectorOptions:
    """How the collector runs (the ``sidecar`` command's flags)."""

    port: int = COLLECTOR_PORT
    address: str = "0.0.0.0"
    period: float = COLLECTOR_PERIOD
    cgroup_root: Path = Path("/sys/fs/cgroup")
    proc_root: Path = Path("/proc")
    cgroup_path: Path | None = None
    processes: bool = True
    network: bool = True
    gpu: bool = True


def build(
    options: CollectorOptions, identity: Identity | None = None
) -> tuple[Reader, SnapshotCollector, CollectorRegistry]:
    """The reader, the Prometheus collector fed by it and a registry holding both it and process metrics.

    Args:
        options: paths and switches.
        identity: pod labels; default from the environment (downward API).

    Returns:
        ``(reader, collector, registry)``; the collector already holds a first snapshot.
    """
    identity = identity or Identity.from_env()
    reader = Reader(
        cgroup_root=options.cgroup_root,
        proc_root=options.proc_root,
        identity=identity,
        cgroup_path=options.cgroup_path,
        processes=options.processes,
        network=options.network,
        nvml=Nvml(enabled=options.gpu),
    )
    collector = SnapshotCollector(identity)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    # The collector's own CPU and memory, so its overhead can be watched where it runs.
    ProcessCollector(namespace="bottleneck_sidecar", registry=registry)
    collector.update(reader.snapshot())
    return reader, collector, registry


def render_once(options: CollectorOptions, identity: Identity | None = None) -> str:
    """One snapshot in the Prometheus text format (``sidecar --once``)."""
    _, _, registry = build(options, identity)
    return generate_latest(registry).decode()


def serve(options: CollectorOptions, stop: threading.Event | None = None) -> None:
    """Serve /metrics and refresh the snapshot every period until ``stop`` is set (or SIGTERM/SIGINT).

    Args:
        options: port, period, paths and switches.
        stop: an event to end the loop from another thread; signals set it in the main thread.

    Raises:
        BottleneckError: the port cannot be bound.
    """
    stop = stop or threading.Event()
    reader, collector, registry = build(options)
    try:
        server, thread = start_http_server(options.port, addr=options.address, registry=registry)
    except OSError as exc:
        raise BottleneckError(
            f"cannot serve /metrics on {options.address}:{options.port}: {exc.strerror or exc}"
        ) from exc
    if threading.current_thread() is threading.main_thread():

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    log.info(
        "collector serving :%d/metrics every %.1f s (cgroup %s, source %s)",
        options.port,
        options.period,
        reader.cgroup_dir,
        collector.latest.source,
    )
    try:
        # Event.wait sleeps in the kernel: no polling between readings.
        while not stop.wait(options.period):
            try:
                collector.update(reader.snapshot())
            except Exception:  # a bug must not kill the pod's only telemetry; keep the last snapshot
                reader.once.warn("snapshot-bug", "reading failed; keeping the last snapshot")
                log.debug("reading failed", exc_info=True)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
