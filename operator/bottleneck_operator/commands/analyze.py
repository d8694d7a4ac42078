"""`bottleneck-operator analyze`: one verdict for one Job from Prometheus alone.

Exit codes: 0 a verdict (including a model abstention), 2 usage error, 3 no or too little data (a JSON
verdict of Unknown with the reason is still printed), 4 Prometheus unreachable.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from typing import Any

from bottleneck_operator.commands._common import add_prometheus_flags, dumps, settings_from_args
from bottleneck_operator.errors import EXIT_NO_DATA, EXIT_OK, UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "analyze",
        help="classify one Job's bottleneck from Prometheus",
        description=(
            "Classify what limits one training Job (IO, CPU, Interconnect, GPU, Memory) from Prometheus "
            "telemetry alone. Times are unix seconds or RFC 3339 (e.g. 2026-01-01T10:00:00Z); by default "
            "the Job's whole lifetime as kube_pod_info shows it."
        ),
    )
    add_prometheus_flags(parser)
    parser.add_argument("--namespace", "-n", required=True, help="the Job's namespace")
    parser.add_argument("--job", required=True, help="the Job's name")
    parser.add_argument("--start", help="window start (unix seconds or RFC 3339)")
    parser.add_argument("--end", help="window end (unix seconds or RFC 3339)")
    parser.add_argument(
        "--lookback",
        type=float,
        default=7 * 86400.0,
        help="seconds back from now to look for the Job's pods when --start/--end are not given (default 7 days)",
    )
    parser.add_argument("--step", type=float, help="query resolution in seconds (default: the step setting)")
    parser.add_argument("--output", "-o", choices=("json", "table"), default="table", help="output format")
    parser.set_defaults(func=main)


def parse_time(text: str, flag: str) -> float:
    """Unix seconds or an RFC 3339 timestamp with a zone, as unix seconds.

    Args:
        text: the flag's value.
        flag: the flag's name, for the message.

    Returns:
        Unix seconds.

    Raises:
        UsageError: neither form, or RFC 3339 without a time zone.
    """
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if value != value or value < 0 or value in (float("inf"), float("-inf")):
            raise UsageError(f"{flag}: not a valid time: {text!r}")
        return value
    try:
        parsed = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError as exc:
        raise UsageError(f"{flag}: not unix seconds or RFC 3339 (e.g. 2026-01-01T10:00:00Z): {text!r}") from exc
    if parsed.tzinfo is None:
        raise UsageError(f"{flag}: RFC 3339 needs a time zone (Z or +HH:MM): {text!r}")
    return parsed.timestamp()


def _no_data_status(namespace: str, job: str, start: float, end: float, reason: str) -> dict[str, Any]:
    import numpy as np

    from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Verdict
    from bottleneck_operator.contract.window import JobWindow
    from bottleneck_operator.reports import status_from_verdict

    window = JobWindow(namespace, job, start, end, 0.0, np.empty(0), ())
    verdict = Verdict(Bottleneck.UNKNOWN, 0.0, {c.value: 0.0 for c in CLASSES}, reason=reason)
    return status_from_verdict(verdict, window, phase="Pending").dump()


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.telemetry.client import PrometheusClient
    from bottleneck_operator.telemetry.layouts import with_matchers
    from bottleneck_operator.telemetry.lifetime import job_lifetime
    from bottleneck_operator.telemetry.names import validate_k8s_name

    settings = settings_from_args(args, step=args.step)
    namespace = validate_k8s_name("namespace", args.namespace)
    job = validate_k8s_name("job", args.job)
    start = parse_time(args.start, "--start") if args.start else None
    end = parse_time(args.end, "--end") if args.end else None
    if start is not None and end is not None and end <= start:
        raise UsageError("--end must be after --start")
    client = PrometheusClient(settings)
    client.check()
    now = time.time()
    if start is None or end is None:
        if args.lookback <= 0:
            raise UsageError("--lookback must be positive")
        # With only --end given, the Job's lifetime is searched back from it.
        search_end = end if end is not None else now
        matchers = with_matchers(settings.labels).selector_matchers
        lifetime = job_lifetime(client, namespace, job, lookback=args.lookback, now=search_end, matchers=matchers)
        if lifetime is None:
            days = args.lookback / 86400
            reason = f"no pods of Job {namespace}/{job} found in Prometheus (kube_pod_info, last {days:.3g} days)"
            print(dumps(_no_data_status(namespace, job, start or now, end or now, reason)))
            return EXIT_NO_DATA
        start = lifetime[0] if start is None else start
        end = lifetime[1] if end is None else end
        if end <= start:
            end = start + settings.step
    analyzer = Analyzer(settings, client=client)
    result = analyzer.analyze_jobs([JobRequest(namespace=namespace, job=job, start=start, end=end)])[0]
    data_problem = (
        result.window is None
        or not result.window.pods
        or (result.verdict.abstention is not None and result.verdict.abstention.is_data_problem)
    )
    if data_problem:
        print(dumps(result.status.dump()))
        return EXIT_NO_DATA
    if args.output == "json":
        print(dumps(result.status.dump()))
    else:
        print(render_table(namespace, job, result.status.dump()))
    return EXIT_OK


def _fmt_time(iso: str | None) -> str:
    return iso or "?"


def render_table(namespace: str, job: str, status: dict[str, Any]) -> str:
    """A readable summary of a report status.

    Args:
        namespace: the Job's namespace.
        job: the Job's name.
        status: ``ReportStatus.dump()``.

    Returns:
        Multi-line text.
    """
    lines: list[str] = []
    conf = status.get("confidence")
    active = status.get("gpuActive")
    window = status.get("window", {})
    lines.append(f"Job {namespace}/{job}")
    lines.append(
        f"  window      {_fmt_time(window.get('start'))} .. {_fmt_time(window.get('end'))} ({window.get('seconds', 0):.0f} s)"
    )
    verdict = status.get("bottleneck", "Unknown")
    secondary = f" (secondary: {status['secondary']})" if status.get("secondary") else ""
    lines.append(f"  bottleneck  {verdict}{secondary}")
    if conf is not None:
        lines.append(f"  confidence  {100 * conf:.0f} %")
    if active is not None:
        lines.append(f"  GPU active  {100 * active:.0f} %")
    if status.get("reason"):
        lines.append(f"  reason      {status['reason']}")
    probs = status.get("probabilities") or {}
    if probs:
        lines.append(
            "  probabilities  " + "  ".join(f"{k} {v:.2f}" for k, v in sorted(probs.items(), key=lambda kv: -kv[1]))
        )
    if status.get("evidence"):
        lines.append("Evidence")
        lines.extend(f"  - {e['message']}" for e in status["evidence"])
    if status.get("recommendations"):
        lines.append("Recommendations")
        lines.extend(f"  - {r['action']} [{r['signal']}]: {r['detail']}" for r in status["recommendations"])
    head = status.get("headroom")
    if head:
        lines.append(f"Headroom  {head['low']:.2f}x .. {head['high']:.2f}x  ({head['basis']})")
    for c in status.get("capacity") or []:
        lines.append(f"Capacity  {c['message']}")
    dq = status.get("dataQuality") or {}
    if dq:
        lines.append(
            f"Data      {dq.get('pods', 0)} pods, {dq.get('gpus', 0)} GPUs, coverage {100 * dq.get('coverage', 0):.0f} %, "
            f"families: {', '.join(dq.get('families', [])) or 'none'}"
        )
        if dq.get("missingFamilies"):
            lines.append(f"          missing: {', '.join(dq['missingFamilies'])}")
    pods = status.get("pods") or []
    if len(pods) > 1:
        lines.append("Pods")
        for p in pods:
            act = p.get("gpuActive")
            act_s = f"{100 * act:.0f} %" if act is not None else "n/a"
            lines.append(
                f"  {p['pod']:<40} {p.get('node') or '-':<20} {p['bottleneck']:<13} {100 * p['confidence']:.0f} %  GPU {act_s}"
            )
    if status.get("modelVersion"):
        lines.append(f"Model     {status['modelVersion']}")
    return "\n".join(lines)
