"""`bottleneck-operator simulate`: simulated training jobs as OpenMetrics (for promtool) or live exporters."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bottleneck_operator.errors import UsageError

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.jobs import SimulatedJob


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "simulate",
        help="simulate training jobs: OpenMetrics for promtool backfilling, or live exporter endpoints",
        description=(
            "Generate simulated training jobs with a known bottleneck and write their dcgm-exporter, "
            "node-exporter, cAdvisor, kube-state-metrics and collector telemetry as OpenMetrics "
            "(backfill with `promtool tsdb create-blocks-from openmetrics FILE DIR`), or serve it live."
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--jobs", type=int, default=10, help="number of jobs (default 10)")
    parser.add_argument("--duration", type=float, default=900.0, help="seconds each job runs (default 900)")
    parser.add_argument(
        "--start", type=float, default=None, help="unix start time (default: now - duration; live: now)"
    )
    parser.add_argument("--classes", default=None, help="comma-separated target classes, e.g. IO,CPU (default all)")
    parser.add_argument("--scrape-interval", type=float, default=None, help="force 15, 30 or 60 s (default: drawn)")
    parser.add_argument("--dcgm-fieldset", choices=("dev", "shipped", "full"), default=None, help="force a field set")
    parser.add_argument("--holdout", action="store_true", help="draw only hardware combinations reserved for holdout")
    parser.add_argument("--ambiguous", action="store_true", help="include near-tie jobs (label margin < 0.15)")
    parser.add_argument("--namespace", default="ml", help="namespace of the jobs (default ml)")
    parser.add_argument("--out", default=None, help="OpenMetrics output file, '-' for stdout")
    parser.add_argument("--labels", default=None, help="write the ground truth per job to this JSON file")
    parser.add_argument("--live", action="store_true", help="serve live /metrics endpoints until interrupted")
    parser.add_argument("--port", type=int, default=0, help="first port of the live endpoints (0: free ports)")
    parser.add_argument("--host", default="127.0.0.1", help="address the live endpoints bind (default 127.0.0.1)")
    parser.set_defaults(func=main)


def _classes(text: str | None) -> list[object] | None:
    from bottleneck_operator.contract.verdict import CLASSES

    if not text:
        return None
    by_name = {c.value.lower(): c for c in CLASSES}
    out: list[object] = []
    for item in text.split(","):
        key = item.strip().lower()
        if key not in by_name:
            raise UsageError(f"unknown class {item.strip()!r}; choose from {', '.join(c.value for c in CLASSES)}")
        out.append(by_name[key])
    return out


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator_dev.simulation import generate_jobs, write_openmetrics

    if not args.live and not args.out and not args.labels:
        raise UsageError("nothing to do: give --out FILE (or '-'), --labels FILE, or --live")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.duration <= 0:
        raise UsageError("--duration must be > 0")
    if args.scrape_interval is not None and args.scrape_interval <= 0:
        raise UsageError("--scrape-interval must be > 0")
    now = time.time()
    start = args.start if args.start is not None else (now if args.live else now - args.duration)
    jobs = generate_jobs(
        args.seed,
        args.jobs,
        start=start,
        duration=args.duration,
        classes=_classes(args.classes),  # type: ignore[arg-type]
        holdout=args.holdout,
        include_ambiguous=args.ambiguous,
        scrape_interval=args.scrape_interval,
        dcgm_fieldset=args.dcgm_fieldset,
        namespace=args.namespace,
    )
    if args.labels:
        _write(args.labels, lambda f: json.dump([j.ground_truth() for j in jobs], f, indent=1, default=str))
    if args.out:
        _write(args.out, lambda f: write_openmetrics(jobs, f))
    if args.live:
        import asyncio  # only for --live: every other command's start-up is spared it

        return asyncio.run(_serve(jobs, args.host, args.port))
    return 0


def _write(target: str, fill: Callable[[TextIO], object]) -> None:
    if target == "-":
        fill(sys.stdout)
        return
    path = Path(target)
    if path.parent and not path.parent.exists():
        raise UsageError(f"directory {path.parent} does not exist")
    try:
        with path.open("w") as f:
            fill(f)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


async def _serve(jobs: Sequence[SimulatedJob], host: str, port: int) -> int:
    import asyncio

    from bottleneck_operator_dev.simulation import LiveExporters

    live = LiveExporters(jobs, base_port=port)
    try:
        urls = await live.start(host)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    for name, url in urls.items():
        print(f"{name}\t{url}/metrics", flush=True)
    try:
        while True:
            await asyncio.sleep(3600)
    finally:
        await live.stop()
