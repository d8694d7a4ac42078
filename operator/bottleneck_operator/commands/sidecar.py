"""`bottleneck-operator sidecar`: the collector that runs inside profiled pods and serves /metrics.

Defaults come from BOTTLENECK_SIDECAR_PORT / BOTTLENECK_SIDECAR_PERIOD (Settings) when no flag is
given. Pod labels come from the downward API variables POD_NAMESPACE, POD_NAME, NODE_NAME, POD_UID.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bottleneck_operator.contract.names import COLLECTOR_PERIOD, COLLECTOR_PORT
from bottleneck_operator.errors import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "sidecar",
        help="the collector injected into profiled pods: serves bottleneck_sidecar_* on /metrics",
        description=(
            "Reads the pod's cgroup v2 files (CPU, throttling, pressure, IO, memory), the workload's process "
            "states and, when available, NVML; serves them for Prometheus. Missing sources are logged once "
            "and their metrics left out."
        ),
    )
    parser.add_argument("--port", type=int, help="port of /metrics (default: BOTTLENECK_SIDECAR_PORT or 9105)")
    parser.add_argument("--address", default="0.0.0.0", help="address to listen on (default: all)")
    parser.add_argument(
        "--period", type=float, help="seconds between readings (default: BOTTLENECK_SIDECAR_PERIOD or 5)"
    )
    parser.add_argument(
        "--cgroup-root",
        type=Path,
        default=Path("/sys/fs/cgroup"),
        help="where the cgroup file system is mounted; the injected collector reads the node's at /host/sys/fs/cgroup",
    )
    parser.add_argument("--cgroup-path", type=Path, help="the pod's cgroup directory (skips the search by POD_UID)")
    parser.add_argument("--proc-root", type=Path, default=Path("/proc"), help="the proc file system (default /proc)")
    parser.add_argument("--no-processes", action="store_true", help="do not read process states")
    parser.add_argument(
        "--no-network",
        action="store_true",
        help="do not count the pod's network bytes (for a pod on the node's network namespace, hostNetwork)",
    )
    parser.add_argument("--no-gpu", action="store_true", help="do not try NVML")
    parser.add_argument("--once", action="store_true", help="print one reading in the Prometheus text format and exit")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.sidecar.service import CollectorOptions, render_once, serve

    # Settings (pydantic) is not loaded here on purpose: it would add its import's memory to a process that must
    # stay small in every profiled pod. The two variables are read the same way Settings reads them.
    port = args.port if args.port is not None else _env_number("BOTTLENECK_SIDECAR_PORT", COLLECTOR_PORT, int)
    period = (
        args.period if args.period is not None else _env_number("BOTTLENECK_SIDECAR_PERIOD", COLLECTOR_PERIOD, float)
    )
    if not 1 <= port <= 65535:
        raise UsageError(f"--port must be within 1..65535, got {port}")
    if not period > 0:
        raise UsageError(f"--period must be > 0, got {period}")
    options = CollectorOptions(
        port=int(port),
        address=args.address,
        period=float(period),
        cgroup_root=args.cgroup_root,
        proc_root=args.proc_root,
        cgroup_path=args.cgroup_path,
        processes=not args.no_processes,
        network=not args.no_network,
        gpu=not args.no_gpu,
    )
    if args.once:
        sys.stdout.write(render_once(options))
        return 0
    serve(options)
    return 0


def _env_number(name: str, default: float, kind: type[int] | type[float]) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise UsageError(f"{name}={raw!r} is not a number") from exc
