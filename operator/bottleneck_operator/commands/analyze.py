"""`bottleneck-operator analyze`: one verdict for one Job from Prometheus alone, or read from its report.

Exit codes: 0 a verdict (including a model abstention), 1 the report of ``--from-report`` could not be
read (none of that name, Kubernetes API unreachable), 2 usage error (an ``--html`` file that cannot be
written included), 3 no or too little data (a
verdict of Unknown with the reason is still printed, in the chosen output), 4 Prometheus unreachable.

Absurd windows are refused with exit 2 before any query: a start at or after the end, a time past
now by more than :data:`CLOCK_SKEW`, a window longer than :data:`MAX_RANGE`, numbers that are not
finite or that no clock reaches (``--start 1e30``). A long window is read at a coarser step
(:mod:`bottleneck_operator.telemetry.plan.grid`), so its memory does not grow with its length.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bottleneck_operator.commands._common import add_prometheus_flags, dumps, settings_from_args
from bottleneck_operator.contract.times import parse_rfc3339, rfc3339
from bottleneck_operator.errors import EXIT_NO_DATA, EXIT_OK, UsageError

if TYPE_CHECKING:
    from bottleneck_operator.contract.window import JobWindow
    from bottleneck_operator.reports import ReportStatus

# Seconds a time may lie past this machine's now (clocks of the cluster and the laptop differ).
CLOCK_SKEW = 300.0
# The longest window analysed: a month and a day, longer than any training run kept in a
# Prometheus with the common retentions (15 to 30 days).
MAX_RANGE = 31 * 86400.0
# The furthest back --lookback searches for a Job's pods.
MAX_LOOKBACK = 90 * 86400.0


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
    parser.add_argument(
        "--namespace", "-n", help="the Job's namespace (with --from-report: default the kubeconfig context's)"
    )
    parser.add_argument("--job", help="the Job's name (required unless --from-report is given)")
    parser.add_argument(
        "--from-report",
        metavar="NAME",
        help="print the existing BottleneckReport NAME (read through the kubeconfig) instead of recomputing",
    )
    parser.add_argument("--kubeconfig", help="with --from-report: the kubeconfig (default $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--context", help="with --from-report: the kubeconfig context (default its current one)")
    parser.add_argument("--start", help="window start (unix seconds or RFC 3339); windows up to 31 days")
    parser.add_argument("--end", help="window end (unix seconds or RFC 3339), not in the future")
    parser.add_argument(
        "--lookback",
        type=float,
        default=7 * 86400.0,
        help=(
            "seconds back from now to look for the Job's pods when --start/--end are not given "
            "(default 7 days, at most 90)"
        ),
    )
    parser.add_argument("--step", type=float, help="query resolution in seconds (default: the step setting)")
    parser.add_argument("--output", "-o", choices=("json", "table"), default="table", help="output format")
    parser.add_argument(
        "--html",
        metavar="FILE",
        type=Path,
        help="also write the report as one self-contained HTML page with plots of the Job's signals",
    )
    parser.set_defaults(func=main)


def _write_html(args: argparse.Namespace, status: ReportStatus, window: JobWindow | None, name: str) -> None:
    """Write the --html page when asked (a path that cannot be written: ``PageNotWritten``, exit code 2)."""
    if args.html is None:
        return
    from bottleneck_operator.html import write_html

    write_html(status, args.html, window=window, name=name)
    print(f"HTML report written to {args.html}", file=sys.stderr)


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
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{flag}: not a valid time: {text!r}")
        return value
    try:
        return parse_rfc3339(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc} (want unix seconds or RFC 3339, e.g. 2026-01-01T10:00:00Z)") from exc


def check_window(start: float | None, end: float | None, now: float) -> None:
    """Refuse a window no Prometheus can sensibly answer, before any query.

    Args:
        start: ``--start`` as unix seconds, None when not given.
        end: ``--end`` as unix seconds, None when not given.
        now: this machine's time.

    Raises:
        UsageError: a time past now by more than :data:`CLOCK_SKEW`, start at or after end, or a
            window longer than :data:`MAX_RANGE`.
    """
    for flag, value in (("--start", start), ("--end", end)):
        if value is not None and value > now + CLOCK_SKEW:
            raise UsageError(f"{flag} lies in the future ({_when(value)}, now is {_when(now)})")
    if start is not None and end is not None:
        if end <= start:
            raise UsageError("--end must be after --start")
        if end - start > MAX_RANGE:
            days = (end - start) / 86400
            raise UsageError(
                f"the window is {days:.4g} days long, over the {MAX_RANGE / 86400:g}-day maximum: "
                "analyse a part of it (--start/--end)"
            )


def _when(t: float) -> str:
    try:
        return rfc3339(t)
    except (OverflowError, OSError, ValueError):
        return f"{t:g} s"


def _check_lookback(lookback: float) -> None:
    if not math.isfinite(lookback) or lookback <= 0 or lookback > MAX_LOOKBACK:
        raise UsageError(f"--lookback must be a positive number of seconds up to {MAX_LOOKBACK:g} (90 days)")


def _check_step(step: float | None) -> None:
    if step is not None and not (math.isfinite(step) and 1 <= step <= MAX_RANGE):
        raise UsageError(f"--step must be a number of seconds from 1 to {MAX_RANGE:g}")


def _no_data_status(namespace: str, job: str, start: float, end: float, reason: str) -> ReportStatus:
    import numpy as np

    from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Verdict
    from bottleneck_operator.contract.window import JobWindow
    from bottleneck_operator.reports import status_from_verdict

    window = JobWindow(namespace, job, start, end, 0.0, np.empty(0), ())
    verdict = Verdict(Bottleneck.UNKNOWN, 0.0, {c.value: 0.0 for c in CLASSES}, reason=reason)
    return status_from_verdict(verdict, window, phase="Pending")


def _print(namespace: str, job: str, status: ReportStatus, output: str) -> None:
    print(dumps(status.dump()) if output == "json" else render_table(namespace, job, status))


def _is_data_problem(status: ReportStatus) -> bool:
    return status.abstention is not None and status.abstention.is_data_problem


def from_report(args: argparse.Namespace) -> int:
    """Print an existing report's status (``--from-report``) in the chosen output; exit codes as for a fresh analysis."""
    from bottleneck_operator.kube.kubeconfig import load
    from bottleneck_operator.reportsource import get_report, typed
    from bottleneck_operator.telemetry.plan.names import validate_k8s_name

    if args.job or args.start or args.end:
        raise UsageError("--from-report reads a finished analysis: --job, --start and --end do not apply")
    target = load(args.kubeconfig, args.context)
    namespace = validate_k8s_name("namespace", args.namespace or target.namespace)
    report = typed(get_report(target, namespace, validate_k8s_name("report", args.from_report)))
    status = report.status
    _write_html(args, status, None, f"{namespace}/{args.from_report}")
    _print(namespace, report.job_name or args.from_report, status, args.output)
    return EXIT_NO_DATA if _is_data_problem(status) else EXIT_OK


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.commands.html_timeline import timeline
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.telemetry.fetch.client import PrometheusClient
    from bottleneck_operator.telemetry.fetch.lifetime import job_lifetime
    from bottleneck_operator.telemetry.plan.names import validate_k8s_name, with_matchers

    if args.from_report:
        return from_report(args)
    if not args.namespace or not args.job:
        raise UsageError("--namespace and --job are required (or --from-report NAME)")
    _check_step(args.step)
    settings = settings_from_args(args, step=args.step)
    namespace = validate_k8s_name("namespace", args.namespace)
    job = validate_k8s_name("job", args.job)
    start = parse_time(args.start, "--start") if args.start else None
    end = parse_time(args.end, "--end") if args.end else None
    now = time.time()
    check_window(start, end, now)
    if start is None or end is None:
        _check_lookback(args.lookback)
    client = PrometheusClient(settings.prometheus)
    client.check()
    if start is None or end is None:
        # With only --end given, the Job's lifetime is searched back from it.
        search_end = end if end is not None else now
        matchers = with_matchers(settings.labels).selector_matchers
        lifetime = job_lifetime(client, namespace, job, lookback=args.lookback, now=search_end, matchers=matchers)
        if lifetime is None:
            days = args.lookback / 86400
            reason = f"no pods of Job {namespace}/{job} found in Prometheus (kube_pod_info, last {days:.3g} days)"
            status = _no_data_status(namespace, job, start or now, end or now, reason)
            _write_html(args, status, None, f"{namespace}/{job}")
            _print(namespace, job, status, args.output)
            return EXIT_NO_DATA
        start = lifetime[0] if start is None else start
        end = lifetime[1] if end is None else end
        if end <= start:
            end = start + settings.analysis.step
        start = _within_range(start, end)
    step = _step(args, start, end, settings.analysis.step)
    analyzer = Analyzer.from_settings(settings, client=client)
    request = JobRequest(namespace=namespace, job=job, start=start, end=end)
    result = analyzer.analyze_jobs([request], step=step)[0]
    page = result.status
    if args.html is not None:  # the operator's per-window timeline, replayed (commands/html_timeline.py)
        entries = timeline(analyzer, namespace, job, start, end, settings.analysis, settings.operation.timeline_length)
        page = page.model_copy(update={"timeline": entries})
    _write_html(args, page, result.window, f"{namespace}/{job}")
    data_problem = (
        result.window is None
        or not result.window.pods
        or (result.verdict.abstention is not None and result.verdict.abstention.is_data_problem)
    )
    _print(namespace, job, result.status, args.output)
    return EXIT_NO_DATA if data_problem else EXIT_OK


def _within_range(start: float, end: float) -> float:
    """The start of a found lifetime, moved so the window is at most :data:`MAX_RANGE` (a note says so)."""
    if end - start <= MAX_RANGE:
        return start
    days = MAX_RANGE / 86400
    print(f"note: the Job ran longer than {days:g} days; its last {days:g} are analysed", file=sys.stderr)
    return end - MAX_RANGE


def _step(args: argparse.Namespace, start: float, end: float, base: float) -> float:
    """The step the window is read at: the base one, coarser for a long window (a note when --step was raised)."""
    from bottleneck_operator.telemetry.plan.grid import SERIES_POINTS, bounded_step

    step = bounded_step(start, end, base)
    if step > base and args.step is not None:
        print(
            f"note: --step {args.step:g} raised to {step:g} s to keep {SERIES_POINTS} points per series",
            file=sys.stderr,
        )
    return step


def _fmt_time(iso: str | None) -> str:
    return iso or "?"


def render_table(namespace: str, job: str, status: ReportStatus) -> str:
    """A readable summary of a report status.

    Args:
        namespace: the Job's namespace.
        job: the Job's name.
        status: the report status.

    Returns:
        Multi-line text.
    """
    return "\n".join([*_verdict_lines(namespace, job, status), *_detail_lines(status), *_pod_lines(status)])


def _verdict_lines(namespace: str, job: str, status: ReportStatus) -> list[str]:
    window = status.window
    span = (
        f"{_fmt_time(window.start)} .. {_fmt_time(window.end)} ({window.seconds:.0f} s)" if window else "? .. ? (0 s)"
    )
    secondary = f" (secondary: {status.secondary})" if status.secondary else ""
    lines = [
        f"Job {namespace}/{job}",
        f"  window      {span}",
        f"  bottleneck  {status.bottleneck or 'Unknown'}{secondary}",
    ]
    if status.mechanism:
        lines.append(f"  mechanism   {status.mechanism}")
    if status.confidence is not None:
        lines.append(f"  confidence  {100 * status.confidence:.0f} %")
    if status.gpu_active is not None:
        lines.append(f"  GPU active  {100 * status.gpu_active:.0f} %")
    if status.reason:
        lines.append(f"  reason      {status.reason}")
    probs = status.probabilities or {}
    if probs:
        ranked = sorted(probs.items(), key=lambda kv: -kv[1])
        lines.append("  probabilities  " + "  ".join(f"{k} {v:.2f}" for k, v in ranked))
    return lines


def _detail_lines(status: ReportStatus) -> list[str]:
    lines: list[str] = []
    if status.evidence:
        lines.append("Evidence")
        lines.extend(f"  - {e.message}" for e in status.evidence)
    if status.recommendations:
        lines.append("Recommendations")
        lines.extend(f"  - {r.action} [{r.signal}]: {r.detail}" for r in status.recommendations)
    head = status.headroom
    if head:
        lines.append(f"Headroom  {head.low:.2f}x .. {head.high:.2f}x  ({head.basis})")
    lines.extend(f"Capacity  {c.message}" for c in status.capacity or [])
    dq = status.data_quality
    if dq:
        lines.append(
            f"Data      {dq.pods} pods, {dq.gpus} GPUs, coverage {100 * dq.coverage:.0f} %, "
            f"families: {', '.join(dq.families) or 'none'}"
        )
        if dq.missing_families:
            lines.append(f"          missing: {', '.join(dq.missing_families)}")
    return lines


def _pod_lines(status: ReportStatus) -> list[str]:
    pods = status.pods or []
    lines: list[str] = []
    if len(pods) > 1:
        lines.append("Pods")
        for p in pods:
            act = f"{100 * p.gpu_active:.0f} %" if p.gpu_active is not None else "n/a"
            lines.append(f"  {p.pod:<40} {p.node or '-':<20} {p.bottleneck:<13} {100 * p.confidence:.0f} %  GPU {act}")
    if status.model_version:
        lines.append(f"Model     {status.model_version}")
    return lines
