"""`bottleneck-operator demo`: the whole loop on this machine, no cluster needed."""

from __future__ import annotations

import argparse
import logging


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the whole loop locally: API emulator, real Prometheus, simulated jobs, the operator",
        description=(
            "Starts an in-process Kubernetes API emulator, a local Prometheus (Debian's) with the history "
            "of simulated training Jobs of every class plus their live exporters, and the operator. "
            "Some Jobs complete meanwhile. Ends by printing the reports as `kubectl get bnr -A -o wide` would."
        ),
    )
    parser.add_argument("--duration", type=float, default=90.0, help="seconds to watch before printing (default 90)")
    parser.add_argument("--jobs", type=int, default=5, help="simulated Jobs per group (two groups; default 5)")
    parser.add_argument("--interval", type=float, default=10.0, help="analysis interval, seconds (default 10)")
    parser.add_argument("--seed", type=int, default=7, help="simulator seed (default 7)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.demo.run import DemoOptions, run_demo
    from bottleneck_operator.errors import UsageError

    if args.duration <= 0 or args.jobs < 1 or args.interval <= 0:
        raise UsageError("--duration and --interval must be > 0 and --jobs >= 1")
    if args.verbose == 0:
        # The demo talks through its own lines; kopf's and aiohttp's chatter stays below WARNING.
        logging.getLogger().setLevel(logging.ERROR)
    run_demo(DemoOptions(duration=args.duration, jobs_per_group=args.jobs, interval=args.interval, seed=args.seed))
    return 0
