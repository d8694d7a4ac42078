"""The one command line: ``bottleneck-operator <command>``.

Exit codes (documented in the README): 0 success, 1 internal error, 2 usage error,
3 no or too little data, 4 Prometheus unreachable. User errors print one line, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from bottleneck_operator import __version__
from bottleneck_operator.commands import COMMANDS, OFFLINE_COMMANDS, offline_placeholder, offline_register
from bottleneck_operator.errors import EXIT_INTERNAL, EXIT_USAGE, BottleneckError


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; the offline `command`, when named, with its real arguments (the others listed only).

    Raises:
        UsageError: `command` is an offline one and the offline package is not installed.
    """
    parser = argparse.ArgumentParser(
        prog="bottleneck-operator",
        description="Tells what limits a Kubernetes training Job: IO, CPU, Interconnect, GPU or Memory.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in COMMANDS:
        register(sub)
    for name in OFFLINE_COMMANDS:
        if name == command:
            offline_register(name)(sub)
        else:
            offline_placeholder(sub, name)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    # No option before the command takes a value, so the first word that is not one names it.
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = _command(words)
    try:
        parser = build_parser(command)
    except BottleneckError as exc:
        print(f"bottleneck-operator {command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(words)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except BottleneckError as exc:
        print(f"bottleneck-operator {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except ValueError as exc:  # pydantic validation of settings, bad flag values
        print(f"bottleneck-operator {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a bug: keep the traceback for the report
        logging.getLogger("bottleneck_operator").exception("internal error")
        return EXIT_INTERNAL
