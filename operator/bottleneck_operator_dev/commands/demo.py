"""`bottleneck-operator demo`: the whole loop on this machine, no cluster needed."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the whole loop locally: API emulator, real Prometheus, simulated jobs, the operator",
        description=(
            "Starts an in-process Kubernetes API emulator, a local Prometheus (Debian's) with the history "
            "of six simulated training Jobs (one per class, and one that turns from IO- to GPU-bound) plus "
            "their live exporters, and the operator. Ends by printing the reports as `kubectl get bnr -A` "
            "would, the changing Job's report in full, the path of its HTML report, and what to try next."
        ),
    )
    parser.add_argument(
        "--duration", type=float, default=80.0, help="most seconds to watch; it stops sooner once done (default 80)"
    )
    parser.add_argument("--interval", type=float, default=5.0, help="analysis interval, seconds (default 5)")
    parser.add_argument("--seed", type=int, default=7, help="simulator seed (default 7)")
    parser.add_argument("--html", type=Path, help="where to write the HTML report (default: in the temp directory)")
    parser.add_argument(
        "--live", choices=("auto", "always", "never"), default="auto",
        help="redraw a progress table in place: auto (on a terminal), always or never",
    )  # fmt: skip
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.errors import UsageError
    from bottleneck_operator_dev.demo.run import DemoOptions, run_demo

    if args.duration <= 0 or args.interval <= 0:
        raise UsageError("--duration and --interval must be > 0")
    if args.verbose == 0:
        # The demo talks through its own lines; kopf's and aiohttp's chatter stays below WARNING.
        logging.getLogger().setLevel(logging.ERROR)
    live = {"auto": None, "always": True, "never": False}[args.live]
    options = DemoOptions(duration=args.duration, interval=args.interval, seed=args.seed, html=args.html, live=live)
    run_demo(options)
    return 0
