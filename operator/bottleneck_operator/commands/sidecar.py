"""`bottleneck-operator sidecar`."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("sidecar", help="(not yet implemented)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("sidecar")
