"""One report in full, as a person reads it: verdict, evidence, advice, headroom, and its timeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bottleneck_operator.contract.times import clock, parse_rfc3339
from bottleneck_operator.reports import BottleneckReport, ReportStatus, as_report
from bottleneck_operator.reports.model import TimelineEntry

# One letter per class for the timeline strip (G for GPU, M for Memory, ...; "?" for Unknown).
LETTERS = {"IO": "I", "CPU": "C", "Interconnect": "N", "GPU": "G", "Memory": "M", "Unknown": "?"}


def _pct(share: float) -> str:
    return f"{100 * share:.0f} %"


def _clock(ts: str) -> str:
    """An RFC 3339 time as the wall-clock time of day (UTC), which is what the timeline needs."""
    try:
        return clock(parse_rfc3339(ts))
    except ValueError:
        return ts


def timeline_runs(timeline: Sequence[TimelineEntry]) -> list[tuple[str, str, str, int, float]]:
    """Consecutive windows with the same verdict merged: (class, first end, last end, windows, mean confidence)."""
    runs: list[tuple[str, str, str, int, float]] = []
    for e in timeline:
        if runs and runs[-1][0] == e.bottleneck:
            cls, first, _, n, conf = runs[-1]
            runs[-1] = (cls, first, e.end, n + 1, (conf * n + e.confidence) / (n + 1))
        else:
            runs.append((e.bottleneck, e.end, e.end, 1, e.confidence))
    return runs


def timeline_lines(status: ReportStatus) -> list[str]:
    """The per-window verdicts: a strip of one letter per window, then one line per run of equal verdicts."""
    timeline = status.timeline or []
    if not timeline:
        return []
    strip = "".join(LETTERS.get(e.bottleneck, "?") for e in timeline)
    lines = [f"Timeline      {strip}   (one letter per analysed window, oldest first; times are window ends, UTC)"]
    for cls, first, last, n, conf in timeline_runs(timeline):
        span = _clock(first) if first == last else f"{_clock(first)} .. {_clock(last)}"
        lines.append(f"  {span:<20}  {cls:<13} {n:>3} window{'s' if n > 1 else ' '}  confidence {_pct(conf)}")
    return lines


def _verdict_lines(report: BottleneckReport) -> list[str]:
    status = report.status
    lines = [f"BottleneckReport {report.key}   phase {status.phase}"]
    verdict: str = status.bottleneck or "Unknown"
    if status.confidence is not None:
        verdict += f"  (confidence {_pct(status.confidence)})"
    if status.secondary:
        verdict += f", runner-up {status.secondary}"
    lines.append(f"Bottleneck    {verdict}")
    if status.mechanism:
        lines.append(f"Mechanism     {status.mechanism}")
    if status.reason:
        lines.append(f"Why Unknown   {status.reason}")
    if status.window is not None:
        w = status.window
        lines.append(f"Window        {_clock(w.start)} .. {_clock(w.end)} UTC ({w.seconds:.0f} s)")
    if status.gpu_active is not None:
        lines.append(f"GPU active    {_pct(status.gpu_active)} of the time")
    return lines


def format_report(report: BottleneckReport | Mapping[str, Any]) -> str:
    """A report in full (typed, or as the API returns it): what ``kubectl get bnr NAME -o yaml`` holds, laid out to be read."""
    typed = as_report(report)
    status = typed.status
    lines = _verdict_lines(typed)
    if status.evidence:
        lines.append("Evidence")
        lines.extend(f"  - {e.message}" for e in status.evidence)
    if status.recommendations:
        lines.append("Try")
        lines.extend(
            f"  - {r.action.rstrip('.')}: {r.detail}" if r.detail else f"  - {r.action}" for r in status.recommendations
        )
    if status.headroom:
        h = status.headroom
        lines.append(f"Headroom      x{h.low:.1f} .. x{h.high:.1f} faster without the bottleneck ({h.basis})")
    lines.extend(f"Capacity      {c.message}" for c in status.capacity or [])
    lines.extend(timeline_lines(status))
    return "\n".join(lines)


def next_steps(html: str | None) -> str:
    """What to try after the demo, on one's own cluster (the demo's Prometheus is gone by then)."""
    lines = ["Next, on your own cluster (see README.md):"]
    if html:
        lines.insert(0, f"Open the HTML report:   {html}\n")
    lines += [
        "  helm install bottleneck-operator charts/bottleneck-operator \\",
        "    --namespace bottleneck-system --create-namespace \\",
        "    --set prometheus.url=http://prometheus-operated.monitoring.svc:9090",
        "  bottleneck-operator doctor --prometheus-url http://localhost:9090   # after kubectl port-forward",
        "  kubectl annotate job NAME -n NS bottleneck.dev/profile=true   # or put it in the Job's manifest",
        "  kubectl get bnr -A",
        "  kubectl bottleneck show NAME -n NS --html report.html   # one report in full, as above",
        "  bottleneck-operator analyze --prometheus-url http://localhost:9090 --namespace NS --job NAME --html report.html",
    ]
    return "\n".join(lines)
