"""``kubectl bottleneck summary``: the cluster's ClusterBottleneckSummary, for people.

What limits the cluster (Jobs and GPU-hours lost by class), where (hot spots, suspect nodes and
GPUs, stragglers), and what to fix first (actions ranked by the GPU-hours they would recover).
Errors are worded as kubectl words them; exit codes are the plugin's (0 success, 1 error).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from bottleneck_operator.contract.names import API_GROUP, API_VERSION
from bottleneck_operator.errors import EXIT_OK
from bottleneck_operator.kube import (
    Resource,
)
from bottleneck_operator.kube.kubeconfig import Target, load
from bottleneck_operator.plugin.render import bold, paint, table, use_colour
from bottleneck_operator.reports import ClusterBottleneckSummary, read_summary
from bottleneck_operator.reports.summary import SUMMARY_KIND, SUMMARY_NAME, SUMMARY_PLURAL
from bottleneck_operator.reportsource import call_api

RESOURCE = Resource(API_GROUP, API_VERSION, SUMMARY_KIND, SUMMARY_PLURAL, namespaced=False)
_ROWS = 10  # rows per section in text; -o json/yaml has everything


def add_parser(sub: Any, kube_flags: Callable[..., None]) -> None:
    """Register the subcommand on the plugin's subparsers (``kube_flags``: the kubectl flags)."""
    p = sub.add_parser("summary", help="the cluster's summary: GPU-hours lost, hot spots, stragglers, what to fix")
    kube_flags(p, namespaced=False)
    p.add_argument("-o", "--output", choices=("json", "yaml"), help="output format (default: text)")
    p.add_argument("--html", metavar="FILE", help="also write the summary as one self-contained HTML page")
    p.set_defaults(func=cmd_summary)


def fetch(target: Target) -> dict[str, Any]:
    """The summary object; :class:`KubectlError` in kubectl's words when it cannot be read."""
    missing = (
        f'Error from server (NotFound): {SUMMARY_PLURAL}.{API_GROUP} "{SUMMARY_NAME}" not found '
        "(the operator writes it after its first analysis pass)"
    )
    return call_api(target, lambda c: c.get(RESOURCE, None, SUMMARY_NAME), not_found=missing)


def cmd_summary(args: argparse.Namespace) -> int:
    obj = fetch(load(args.kubeconfig, args.context))
    # Shown, not worked on: what another version wrote that this one refuses is left out.
    summary = read_summary(obj, drop_invalid=True)
    if args.html:
        from bottleneck_operator.html import write_summary_html

        write_summary_html(summary.status, Path(args.html))
        print(f"HTML summary written to {args.html}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps(obj, indent=4))
    elif args.output == "yaml":
        print(yaml.safe_dump(obj, sort_keys=False, allow_unicode=True).rstrip("\n"))
    else:
        print(describe_summary(summary, colour=use_colour(sys.stdout)))
    return EXIT_OK


def _h(value: float) -> str:
    return f"{value:,.1f}"


def describe_summary(summary: ClusterBottleneckSummary, *, colour: bool = False) -> str:
    """The summary as text: a headline, then one table per section (empty sections left out)."""
    if not summary.written:
        return "The summary is empty: the operator has not finished a pass yet."
    status = summary.status
    top = status.top_bottleneck
    lines = [
        bold("Cluster bottleneck summary", colour),
        f"Jobs: {status.jobs}   GPU-hours: {_h(status.gpu_hours)}   "
        f"lost: {_h(status.gpu_hours_lost)}   costliest: {paint(top, top, colour) if top else 'none'}",
    ]
    by_class, lost = status.by_class, status.lost_by_class
    seen = [c for c in set(by_class) | set(lost) if by_class.get(c) or lost.get(c)]  # no rows of zeros
    classes = sorted(seen, key=lambda c: -lost.get(c, 0.0))
    if classes:
        rows = [["CLASS", "JOBS", "GPU-HOURS LOST"]] + [
            [c, str(by_class.get(c, 0)), _h(lost.get(c, 0.0))] for c in classes
        ]
        lines += ["", table(rows, colour_column=0, colour=colour)]
    lines += _section("What to fix first", ["ACTION", "CLASS", "JOBS", "GPU-HOURS RECOVERED"],
                      [[a.action, a.bottleneck, a.jobs, _h(a.gpu_hours)] for a in status.top_recommendations])  # fmt: skip
    lines += _section("Hot spots", ["FINDING", "P-VALUE"], [[h.message, f"{h.p_value:.2g}"] for h in status.hot_spots])
    lines += _section("Suspect nodes and GPUs", ["FINDING", "P-VALUE"],
                      [[s.message, f"{s.p_value:.2g}"] for s in status.suspects])  # fmt: skip
    stragglers = [
        [f"{s.namespace}/{s.job}", s.pod, s.node or "<none>", s.gpu or "all", s.cause, f"{100 * s.share:.0f}%"]
        for s in status.stragglers
    ]
    lines += _section("Stragglers", ["JOB", "POD", "NODE", "GPU", "CAUSE", "TIME LOST"], stragglers)
    lines += _section("GPU-hours lost by namespace", ["NAMESPACE", "CLASS", "GPU-HOURS"],
                      [[x.namespace, x.bottleneck, _h(x.gpu_hours)] for x in status.lost_by_namespace])  # fmt: skip
    return "\n".join(lines)


def _section(title: str, head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    if not rows:
        return []
    shown = [[str(c) for c in r] for r in rows[:_ROWS]]
    more = [f"... and {len(rows) - _ROWS} more (-o yaml shows all)"] if len(rows) > _ROWS else []
    return ["", f"{title}:", table([list(head), *shown]), *more]
