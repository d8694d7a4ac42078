"""`bottleneck-operator doctor`: what the analysis can say from a Prometheus, and what would fix each gap.

Exit codes: 0 a verdict is possible (gaps may remain: see the table), 2 usage error, 3 a required
family is missing (no verdict possible), 4 Prometheus unreachable.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from bottleneck_operator.commands._common import add_prometheus_flags, dumps, settings_from_args
from bottleneck_operator.errors import EXIT_NO_DATA, EXIT_OK

if TYPE_CHECKING:
    from bottleneck_operator.telemetry.doctor import Diagnosis


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "doctor",
        help="check what the analysis can say from a Prometheus, and how to fix each gap",
        description=(
            "Check each family the analysis reads (dcgm-exporter, kube-state-metrics, cAdvisor, node-exporter, "
            "the collector): present, label layout, scrape interval, node join, DCGM fields; and whether Prometheus "
            "scrapes every injected collector and exporter target (`up`, and the collectors' PodMonitor among its "
            "scrape pools where the API lists them). Prints what the analysis will and will not be able to say, and "
            "the exact change that closes each gap. Exit 0 when a verdict is possible, 3 when a required family is "
            "missing."
        ),
    )
    add_prometheus_flags(parser)
    parser.add_argument("--namespace", "-n", help="look at this namespace's pods only")
    parser.add_argument("--at", type=float, help="evaluation time, unix seconds (default: now)")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="output format")
    parser.set_defaults(func=main)


def table(diagnosis: Diagnosis) -> str:
    """The diagnosis as a plain-text table, then what to change, one line per gap."""
    rows = [("FAMILY", "STATUS", "FOUND")] + [(f.family, f.status, f.found) for f in diagnosis.findings]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}" for r in rows]
    lines.append("")
    verdict = "yes" if diagnosis.verdict_possible else "NO (a required family is missing)"
    lines.append(f"Verdicts possible: {verdict}")
    for f in diagnosis.findings:
        if f.can:
            lines.append(f"  {f.family} can tell: {f.can}")
        if f.cannot:
            lines.append(f"  {f.family} cannot tell: {f.cannot}")
    fixes = [f for f in diagnosis.findings if f.fix]
    if fixes:
        lines += ["", "To fix:"] + [f"  {f.family}: {f.fix}" for f in fixes]
    lines += [f"Note: {n}" for n in diagnosis.notes]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.telemetry import PrometheusClient
    from bottleneck_operator.telemetry.doctor import check

    settings = settings_from_args(args)
    client = PrometheusClient(settings.prometheus)
    try:
        diagnosis = check(client, settings.labels, args.at if args.at is not None else time.time(), args.namespace)
    finally:
        client.close()
    print(dumps(diagnosis.as_dict()) if args.output == "json" else table(diagnosis))
    return EXIT_OK if diagnosis.verdict_possible else EXIT_NO_DATA
