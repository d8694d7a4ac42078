"""``kubectl bottleneck show NAME``: one report in full, as ``kubectl describe`` lays things out.

The timeline draws one column per analysed window (oldest left): the verdict as a coloured letter,
its confidence and, where the report carries it, the GPU activity, as sparklines. Long timelines
are squeezed into :data:`WIDTH` columns (mean of numbers, most frequent verdict).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bottleneck_operator.plugin.render import SPARKS, UNMEASURED, bold, headroom_text, paint, pct, table
from bottleneck_operator.reports import BottleneckReport, ReportStatus, read_status

WIDTH = 60
LETTERS = {"IO": "I", "CPU": "C", "Interconnect": "N", "GPU": "G", "Memory": "M", "Unknown": "?"}


def sparkline(values: Sequence[float | None]) -> str:
    """One block per value in 0..1 (▁ lowest, █ highest); a space where there is no value."""
    out = []
    for v in values:
        if v is None or v != v:
            out.append(" ")
        else:
            out.append(SPARKS[min(len(SPARKS) - 1, max(0, int(v * len(SPARKS))))])
    return "".join(out)


def _squeeze(items: Sequence[Any], width: int) -> list[list[Any]]:
    """``items`` in at most ``width`` consecutive groups of near-equal size."""
    if len(items) <= width:
        return [[x] for x in items]
    return [list(items[i * len(items) // width : (i + 1) * len(items) // width]) for i in range(width)]


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def timeline_lines(
    status: ReportStatus | Mapping[str, Any],
    colour: bool,
    width: int = WIDTH,
    gpu: Sequence[float | None] | None = None,
) -> list[str]:
    """The timeline block: verdict letters, confidence and GPU activity sparklines, the span and a legend.

    Args:
        status: the report's status (a mapping: its API form, read through the report models).
        colour: paint the verdict letters.
        width: at most this many columns.
        gpu: GPU activity per timeline window (read from Prometheus); default the entries' own
            GPU activity where they carry it.
    """
    typed = status if isinstance(status, ReportStatus) else read_status(status)
    entries = typed.timeline or []
    if gpu is None and any(e.gpu_active is not None for e in entries):
        gpu = [e.gpu_active for e in entries]
    if not entries:
        if not gpu or all(v is None for v in gpu):
            return ["Timeline:      <none> (no window analysed yet)"]
        row = sparkline([_mean(g) for g in _squeeze(list(gpu), width)])
        return [
            "Timeline:      no per-window verdicts; GPU activity across the analysed window",
            f"  GPU active   {row}",
        ]
    groups = _squeeze(list(range(len(entries))), width)
    verdicts = [Counter(entries[i].bottleneck for i in g).most_common(1)[0][0] for g in groups]
    letters = "".join(paint(LETTERS.get(v, "?"), v, colour) for v in verdicts)
    conf = sparkline([_mean([entries[i].confidence for i in g]) for g in groups])
    lines = [
        f"Timeline:      {len(entries)} windows, oldest first",
        f"  verdict      {letters}",
        f"  confidence   {conf}",
    ]
    if gpu is not None and all(v is None for v in gpu):
        lines.append("  GPU active   <no samples>")
    elif gpu is not None and len(gpu) == len(entries):
        lines.append(f"  GPU active   {sparkline([_mean([gpu[i] for i in g]) for g in groups])}")
    lines.append(f"  span         {entries[0].start} .. {entries[-1].end}")
    seen = sorted(set(verdicts), key=lambda v: list(LETTERS).index(v) if v in LETTERS else len(LETTERS))
    lines.append("  legend       " + "  ".join(f"{paint(LETTERS[v], v, colour)}={v}" for v in seen if v in LETTERS))
    return lines


def _header(report: BottleneckReport, colour: bool) -> list[str]:
    s = report.status
    verdict = paint(s.bottleneck or "<none>", s.bottleneck, colour)
    if s.confidence is not None:
        verdict += f"  (confidence {pct(s.confidence)}"
        verdict += f", secondary {s.secondary})" if s.secondary else ")"
    lines = [
        f"Name:          {report.name}",
        f"Namespace:     {report.namespace}",
        f"Job:           {report.job_name}",
        f"Phase:         {s.phase if report.analysed else '<none>'}",
        f"Bottleneck:    {verdict}",
    ]
    if s.mechanism:
        lines.append(f"Mechanism:     {s.mechanism}")
    if s.reason:
        lines.append(f"Reason:        {s.reason}" + (f" ({s.abstention.value})" if s.abstention else ""))
    if s.gpu_active is not None:
        lines.append(f"GPU active:    {pct(s.gpu_active)} {sparkline([s.gpu_active])}")
    if s.window:
        lines.append(f"Window:        {s.window.start} .. {s.window.end} ({s.window.seconds:.0f} s)")
    if s.probabilities:
        ranked = sorted(s.probabilities.items(), key=lambda kv: -kv[1])
        lines.append("Probabilities: " + "  ".join(f"{k} {v:.2f}" for k, v in ranked))
    return lines


def _unit(value: float, unit: str) -> str:
    """A figure as people read it: ratios as percentages, bytes with SI prefixes (2.16 GB/s)."""
    if unit == "ratio":
        return f"{100 * value:.3g}%"
    if unit in ("B", "B/s"):
        for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip()


def _body(s: ReportStatus, colour: bool) -> list[str]:
    lines: list[str] = []
    if s.evidence:
        lines += ["", bold("Evidence:", colour)]
        for e in s.evidence:
            ref = f" (reference {_unit(e.reference, e.unit)})" if e.reference is not None else ""
            lines.append(f"  - {e.message}  [{e.signal}: {_unit(e.observed, e.unit)}{ref}]")
    if s.recommendations:
        lines += ["", bold("Recommendations:", colour)]
        for n, r in enumerate(s.recommendations, 1):
            lines += [f"  {n}. {r.action}  [{r.signal}]", f"     {r.detail}"]
    if s.headroom or s.capacity or headroom_text(s) == UNMEASURED:
        lines += ["", bold("Headroom and capacity:", colour)]
        basis = s.headroom.basis if s.headroom else "no measured wait or GPU busy share bounds it"
        lines.append(f"  headroom  {headroom_text(s, digits=2)}  ({basis})")
        for c in s.capacity or []:
            lines.append(
                f"  {c.resource}: needs {_unit(c.needed, c.unit)}, observed {_unit(c.observed, c.unit)}: {c.message}"
            )
    return lines


def _pods(s: ReportStatus, colour: bool) -> list[str]:
    if not s.pods:
        return []
    rows = [["POD", "NODE", "BOTTLENECK", "CONFIDENCE", "GPU", ""]]
    for p in s.pods:
        gpu = "" if p.gpu_active is None else sparkline([p.gpu_active])
        rows.append([p.pod, p.node or "<none>", p.bottleneck, pct(p.confidence), pct(p.gpu_active), gpu])
    body = table(rows, colour_column=2, colour=colour)
    return ["", bold("Pods:", colour), *("  " + line for line in body.splitlines())]


def _stragglers(s: ReportStatus, colour: bool) -> list[str]:
    """The pods (and GPUs) behind their peers, with what lags and the share of the Job's time it costs."""
    if not s.stragglers:
        return []
    lines = ["", bold("Stragglers (against the Job's own peers):", colour)]
    for st in s.stragglers:
        where = " ".join(
            x for x in (st.pod, f"on {st.node}" if st.node else "", f"GPU {st.gpu}" if st.gpu else "") if x
        )
        lines.append(f"  - {where}: {st.cause}, costs {pct(st.share)} of the Job's time")
        for lag in st.evidence:
            lines.append(
                f"      {lag.signal} {lag.observed:.3g} against the peers' {lag.peers:.3g} (score {lag.score:.1f})"
            )
    return lines


def _tail(s: ReportStatus, colour: bool) -> list[str]:
    lines: list[str] = []
    dq = s.data_quality
    if dq:
        lines += [
            "",
            bold("Data:", colour),
            f"  {dq.pods} pods, {dq.gpus} GPUs, coverage {pct(dq.coverage)}, families: {', '.join(dq.families) or 'none'}",
        ]
        if dq.missing_families:
            lines.append(f"  missing: {', '.join(dq.missing_families)}")
        lines += [f"  note: {n}" for n in dq.notes]
    if s.conditions:
        lines += ["", bold("Conditions:", colour)]
        rows = [["TYPE", "STATUS", "REASON", "MESSAGE"]] + [
            [c.type, c.status, c.reason, c.message] for c in s.conditions
        ]
        lines += ["  " + line for line in table(rows).splitlines()]
    if s.model_version:
        lines += ["", f"Model:         {s.model_version}"]
    if s.last_analysis_time:
        lines.append(f"Analysed:      {s.last_analysis_time}")
    return lines


def describe(report: BottleneckReport, colour: bool = False, gpu: Sequence[float | None] | None = None) -> str:
    """A report in full: verdict, evidence, recommendations, headroom and capacity, pods, timeline, data.

    ``gpu``: GPU activity per timeline window (see :func:`timeline_lines`).
    """
    s = report.status
    lines = _header(report, colour)
    lines += _body(s, colour)
    lines += _pods(s, colour)
    lines += _stragglers(s, colour)
    lines += ["", *timeline_lines(s, colour, gpu=gpu)]
    lines += _tail(s, colour)
    return "\n".join(lines)
