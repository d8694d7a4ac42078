"""``kubectl bottleneck list``: ``kubectl get bnr`` with its ``-l``, ``-w`` and ``--sort-by``.

- ``-l/--selector``: a label selector in kubectl's syntax, sent to the API server.
- ``--sort-by``: a JSONPath to one field (``.status.confidence``, ``{.metadata.creationTimestamp}``);
  numbers sort as numbers, text as text, reports without the field first; the order applies to
  the first listing, as kubectl's does.
- ``-w/--watch``: after the table, one more row each time a report is added, changes or is
  deleted, in the table's columns, until interrupted (or ``--request-timeout`` seconds pass).
  With ``-o json|yaml`` each change prints the whole report.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from bottleneck_operator.errors import EXIT_OK
from bottleneck_operator.kube.kubeconfig import Target
from bottleneck_operator.plugin.render import paint, report_rows, table, use_colour
from bottleneck_operator.reports import BottleneckReport
from bottleneck_operator.reportsource import KubectlError, list_reports, typed, watch_reports

_STEP = re.compile(r"\.?(?:\['([^']+)'\]|([^.\[\]]+))|\[(\d+)\]")


def add_list_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``list`` shares with ``kubectl get``."""
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="list the reports of every namespace")
    parser.add_argument("-o", "--output", choices=("json", "yaml", "wide"), help="output format (default: a table)")
    parser.add_argument(
        "-l", "--selector", default="", help="label selector, as kubectl's (e.g. -l team=vision,tier!=dev)"
    )
    parser.add_argument(
        "--sort-by", metavar="JSONPATH", help="sort by a field, as kubectl's (e.g. --sort-by=.status.confidence)"
    )
    parser.add_argument("-w", "--watch", action="store_true", help="after the list, print each change as it happens")
    parser.add_argument(
        "--request-timeout",
        type=_duration,
        metavar="DURATION",
        help="with --watch: stop watching after this long, as kubectl's (5, 5s, 2m, 1h; default: until interrupted)",
    )


def _duration(text: str) -> float | None:
    """kubectl's ``--request-timeout``: seconds, or a number with s, m or h; 0 means no limit."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: want e.g. 30, 30s, 5m or 1h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return seconds or None


def field_path(expression: str) -> list[str | int]:
    """A kubectl ``--sort-by`` JSONPath (``.a.b``, ``{.a['b.c'][0]}``) as keys and indices."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None or m.end() == pos:
            raise KubectlError(f'error: couldn\'t parse the --sort-by JSONPath "{expression}"')
        steps.append(int(m.group(3)) if m.group(3) is not None else (m.group(1) or m.group(2)))
        pos = m.end()
    if not steps:
        raise KubectlError(f'error: couldn\'t parse the --sort-by JSONPath "{expression}"')
    return steps


def _lookup(obj: Any, steps: Sequence[str | int]) -> Any:
    for step in steps:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and -len(obj) <= step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
        if obj is None:
            return None
    return obj


def sort_reports(reports: list[dict[str, Any]], expression: str) -> list[dict[str, Any]]:
    """The reports ordered by one field; those without it first (stable, like kubectl's sort)."""
    steps = field_path(expression)
    values = [_lookup(r, steps) for r in reports]
    if reports and all(v is None for v in values):
        raise KubectlError(f'error: couldn\'t find any field with path "{expression}" in the list of objects')

    def key(pair: tuple[Any, dict[str, Any]]) -> tuple[int, float, str]:
        value = pair[0]
        if value is None:
            return (0, 0.0, "")
        if isinstance(value, bool | int | float):
            return (1, float(value), "")
        return (2, 0.0, json.dumps(value) if isinstance(value, Mapping | list) else str(value))

    return [r for _, r in sorted(zip(values, reports, strict=True), key=key)]


def _dump(data: Any, output: str) -> str:
    if output == "json":
        return json.dumps(data, indent=4)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def cmd_list(args: argparse.Namespace, target: Target, namespace: str | None) -> int:
    """Print the reports; with ``--watch``, then follow their changes."""
    reports = list_reports(target, namespace, args.selector)
    if args.sort_by:
        reports = sort_reports(reports, args.sort_by)
    structured = args.output in ("json", "yaml")
    if structured and not args.watch:
        items = {"apiVersion": "v1", "kind": "List", "items": reports, "metadata": {"resourceVersion": ""}}
        print(_dump(items, args.output))
        return EXIT_OK
    colour_column = 3 if namespace is None else 2
    colour = use_colour(sys.stdout)
    read = [typed(r) for r in reports]
    rows = report_rows(read, all_namespaces=namespace is None, wide=args.output == "wide")
    if structured:
        for report in reports:
            print(_dump(report, args.output), flush=True)
    elif len(rows) > 1:
        print(table(rows, colour_column=colour_column, colour=colour), flush=True)
    elif not args.watch:
        where = f" in {namespace} namespace" if namespace else ""
        print(f"No resources found{where}.", file=sys.stderr)
    if args.watch:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        seen = {_version(r) for r in read}
        _follow(args, target, namespace, seen, widths, (colour_column, colour), header=len(rows) > 1 or structured)
    return EXIT_OK


def _version(report: BottleneckReport) -> tuple[str, str]:
    meta = report.metadata
    return (str(meta.uid or meta.name), str(meta.resource_version or ""))


def _follow(
    args: argparse.Namespace,
    target: Target,
    namespace: str | None,
    seen: set[tuple[str, str]],
    widths: list[int],
    painting: tuple[int, bool],
    *,
    header: bool,
) -> None:
    shown = [header]

    def on_event(kind: str, raw: dict[str, Any]) -> None:
        report = typed(raw)
        version = _version(report)
        if version in seen and kind != "DELETED":
            return  # the watch replays what the list already showed
        seen.add(version)
        if args.output in ("json", "yaml"):
            print(_dump(raw, args.output), flush=True)
            return
        rows = report_rows([report], all_namespaces=namespace is None, wide=args.output == "wide")
        if not shown[0]:
            print(_line(rows[0], widths, painting, head=True), flush=True)
            shown[0] = True
        print(_line(rows[1], widths, painting, head=False), flush=True)

    watch_reports(target, namespace, args.selector, on_event, duration=args.request_timeout)


def _line(row: Sequence[str], widths: Sequence[int], painting: tuple[int, bool], *, head: bool) -> str:
    """One row in the first table's columns (kubectl keeps them; a longer cell pushes the rest along)."""
    column, colour = painting
    cells = []
    for i, cell in enumerate(row):
        pad = " " * max(0, widths[i] - len(cell))
        cells.append((cell if head or i != column else paint(cell, cell, colour)) + pad)
    return "   ".join(cells).rstrip()
