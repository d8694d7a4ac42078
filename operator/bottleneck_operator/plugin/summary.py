"""``kubectl bottleneck summary``: the cluster's ClusterBottleneckSummary, for people.

What limits the cluster (Jobs and GPU-hours lost by class), where (hot spots, suspect nodes and
GPUs, stragglers), and what to fix first (actions ranked by the GPU-hours they would recover).
Errors are worded as kubectl words them; exit codes are the plugin's (0 success, 1 error).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from bottleneck_operator.contract.names import API_GROUP, API_VERSION
from bottleneck_operator.errors import EXIT_OK
from bottleneck_operator.kube import (
    ApiUnavailable,
    CredentialsError,
    KubeClient,
    KubeError,
    NotFound,
    Resource,
    Unauthorized,
)
from bottleneck_operator.kube.kubeconfig import Target, load
from bottleneck_operator.plugin.render import bold, paint, table, use_colour
from bottleneck_operator.reports.summary import SUMMARY_KIND, SUMMARY_NAME, SUMMARY_PLURAL
from bottleneck_operator.reportsource import KubectlError

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

    async def get() -> dict[str, Any]:
        client = KubeClient(lambda: target.credentials, concurrency=1, timeout=15.0)
        try:
            return await client.get(RESOURCE, None, SUMMARY_NAME)
        finally:
            await client.close()

    name = f"{SUMMARY_PLURAL}.{API_GROUP}"
    try:
        return asyncio.run(get())
    except NotFound as exc:
        raise KubectlError(
            f'Error from server (NotFound): {name} "{SUMMARY_NAME}" not found '
            "(the operator writes it after its first analysis pass)"
        ) from exc
    except Unauthorized as exc:
        kind = "Forbidden" if exc.status == 403 else "Unauthorized"
        raise KubectlError(f"Error from server ({kind}): {exc}") from exc
    except ApiUnavailable as exc:
        raise KubectlError(f"Unable to connect to the server {target.credentials.server}: {exc}") from exc
    except CredentialsError as exc:
        raise KubectlError(f"error: {exc}") from exc
    except KubeError as exc:
        raise KubectlError(f"Error from server: {exc}") from exc


def cmd_summary(args: argparse.Namespace) -> int:
    obj = fetch(load(args.kubeconfig, args.context))
    status = obj.get("status") or {}
    if args.html:
        from bottleneck_operator.html import write_summary_html

        write_summary_html(status, Path(args.html))
        print(f"HTML summary written to {args.html}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps(obj, indent=4))
    elif args.output == "yaml":
        print(yaml.safe_dump(obj, sort_keys=False, allow_unicode=True).rstrip("\n"))
    else:
        print(describe_summary(status, colour=use_colour(sys.stdout)))
    return EXIT_OK


def _list(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = status.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _h(value: object) -> str:
    return f"{float(value):,.1f}" if isinstance(value, int | float) else "-"


def describe_summary(status: Mapping[str, Any], *, colour: bool = False) -> str:
    """The summary as text: a headline, then one table per section (empty sections left out)."""
    if not status:
        return "The summary is empty: the operator has not finished a pass yet."
    top = status.get("topBottleneck")
    lines = [
        bold("Cluster bottleneck summary", colour),
        f"Jobs: {status.get('jobs', 0)}   GPU-hours: {_h(status.get('gpuHours'))}   "
        f"lost: {_h(status.get('gpuHoursLost'))}   costliest: {paint(str(top), top, colour) if top else 'none'}",
    ]
    by_class, lost = status.get("byClass") or {}, status.get("lostByClass") or {}
    seen = [c for c in set(by_class) | set(lost) if by_class.get(c) or lost.get(c)]  # no rows of zeros
    classes = sorted(seen, key=lambda c: -float(lost.get(c, 0.0)))
    if classes:
        rows = [["CLASS", "JOBS", "GPU-HOURS LOST"]] + [
            [c, str(by_class.get(c, 0)), _h(lost.get(c, 0.0))] for c in classes
        ]
        lines += ["", table(rows, colour_column=0, colour=colour)]
    lines += _section("What to fix first", ["ACTION", "CLASS", "JOBS", "GPU-HOURS RECOVERED"],
                      [[a.get("action"), a.get("bottleneck"), a.get("jobs"), _h(a.get("gpuHours"))]
                       for a in _list(status, "topRecommendations")])  # fmt: skip
    lines += _section("Hot spots", ["FINDING", "P-VALUE"],
                      [[h.get("message"), f"{float(h.get('pValue', 1.0)):.2g}"] for h in _list(status, "hotSpots")])  # fmt: skip
    lines += _section("Suspect nodes and GPUs", ["FINDING", "P-VALUE"],
                      [[s.get("message"), f"{float(s.get('pValue', 1.0)):.2g}"] for s in _list(status, "suspects")])  # fmt: skip
    stragglers = [
        [f"{s.get('namespace')}/{s.get('job')}", s.get("pod"), s.get("node") or "<none>", s.get("gpu") or "all",
         s.get("cause"), f"{100 * float(s.get('share', 0.0)):.0f}%"]
        for s in _list(status, "stragglers")
    ]  # fmt: skip
    lines += _section("Stragglers", ["JOB", "POD", "NODE", "GPU", "CAUSE", "TIME LOST"], stragglers)
    lines += _section("GPU-hours lost by namespace", ["NAMESPACE", "CLASS", "GPU-HOURS"],
                      [[x.get("namespace"), x.get("bottleneck"), _h(x.get("gpuHours"))]
                       for x in _list(status, "lostByNamespace")])  # fmt: skip
    return "\n".join(lines)


def _section(title: str, head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    if not rows:
        return []
    shown = [[str(c) for c in r] for r in rows[:_ROWS]]
    more = [f"... and {len(rows) - _ROWS} more (-o yaml shows all)"] if len(rows) > _ROWS else []
    return ["", f"{title}:", table([list(head), *shown]), *more]
