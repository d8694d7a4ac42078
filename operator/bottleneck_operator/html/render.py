"""The page: the verdict, its evidence, plots of the Job's signals, the verdict timeline, the pods.

Everything comes from the typed status (:class:`~bottleneck_operator.reports.ReportStatus`; a status
in its API form is read through the report models first, fields that do not validate left out): a
field the status lacks is left out of the page, never an error. Every value from the status is
HTML-escaped, since pod names and messages are not ours.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bottleneck_operator.contract.labels import signal_label
from bottleneck_operator.contract.times import parse_rfc3339_or_none
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.html import series
from bottleneck_operator.html.output import write_page
from bottleneck_operator.html.plots import (
    CLASS_COLOURS,
    Plot,
    Segment,
    heatmap_plot,
    require_matplotlib,
    signal_plot,
    stacked_plot,
    timeline_plot,
)
from bottleneck_operator.html.shares import step_shares
from bottleneck_operator.html.template import PAGE
from bottleneck_operator.reports import CapacityItem, ReportStatus, read_status


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: object) -> str:
    return f"{100 * float(value):.0f} %" if isinstance(value, int | float) else "n/a"


def _num(value: object) -> str:
    return f"{float(value):.3g}" if isinstance(value, int | float) else ""


def _badge(cls: object) -> str:
    colour = CLASS_COLOURS.get(str(cls), CLASS_COLOURS["Unknown"])
    return f'<span class="badge" style="background:{colour}">{_e(cls)}</span>'


def _verdict(status: ReportStatus, title: str) -> str:
    window = status.window
    facts: list[tuple[str, object]] = [("Job", title)]
    if status.secondary:
        facts.append(("Secondary", status.secondary))
    facts += [("Confidence", _pct(status.confidence)), ("GPU active", _pct(status.gpu_active))]
    if "phase" in status.model_fields_set:  # the default phase of a bare verdict is not shown
        facts.append(("Phase", status.phase))
    if window is not None:
        facts.append(("Window", f"{window.start} .. {window.end} ({_num(window.seconds)} s)"))
    head = status.headroom
    if head is not None:
        facts.append(("Headroom", f"{_num(head.low)}x .. {_num(head.high)}x ({head.basis})"))
    if status.model_version:
        facts.append(("Model", status.model_version))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
    reason = f'<div class="reason">{_e(status.reason)}</div>' if status.reason else ""
    return (
        f'<section class="card" id="verdict"><div class="verdict">{_badge(status.bottleneck or "Unknown")}'
        f'<dl class="facts">{dl}</dl></div>{reason}{_probabilities(status)}</section>'
    )


def _probabilities(status: ReportStatus) -> str:
    probs = status.probabilities
    if not probs:
        return ""
    rows = []
    for cls, p in sorted(probs.items(), key=lambda kv: -float(kv[1])):
        colour = CLASS_COLOURS.get(str(cls), CLASS_COLOURS["Unknown"])
        width = max(0.0, min(100.0, 100 * float(p)))
        rows.append(
            f'<span>{_e(cls)}</span><div class="bar" style="width:{width:.1f}%;background:{colour}"></div>'
            f'<span class="muted">{float(p):.2f}</span>'
        )
    return f'<h2>Probabilities</h2><div class="probs">{"".join(rows)}</div>'


def _items(title: str, anchor: str, entries: Sequence[str]) -> str:
    if not entries:
        return ""
    return f'<h2 id="{anchor}">{_e(title)}</h2><ul>{"".join(f"<li>{e}</li>" for e in entries)}</ul>'


def _evidence(status: ReportStatus) -> str:
    ev = []
    for e in status.evidence or []:
        ref = f", reference {_num(e.reference)}" if e.reference is not None else ""
        ev.append(
            f'{_e(e.message)} <span class="muted">({_e(signal_label(e.signal))}: '
            f"{_e(_num(e.observed))} {_e(e.unit)}{_e(ref)})</span>"
        )
    recs = [
        f'<strong>{_e(r.action)}</strong> <span class="muted">[{_e(signal_label(r.signal))}]</span>: {_e(r.detail)}'
        for r in status.recommendations or []
    ]
    caps = [_e(c.message) for c in status.capacity or []]
    return (
        _items("Evidence", "evidence", ev)
        + _items("Recommendations", "recommendations", recs)
        + _items("Capacity", "capacity", caps)
    )


def _figure(plot: Plot) -> str:
    return (
        f'<figure class="plot" id="plot-{_e(plot.key)}" data-plot="{_e(plot.key)}" '
        f'data-points="{plot.points}" data-series="{plot.series}">'
        f"<figcaption>{_e(plot.title)}</figcaption>{plot.svg}</figure>"
    )


def _segments(status: ReportStatus) -> list[Segment]:
    """The status's timeline, or one segment for the whole window when it has none."""
    entries: list[tuple[str, str, str, float | None]] = [
        (t.start, t.end, t.bottleneck, t.confidence) for t in status.timeline or []
    ]
    if not entries and status.window is not None:
        w = status.window
        entries = [(w.start, w.end, status.bottleneck or "Unknown", status.confidence)]
    out: list[Segment] = []
    for start_text, end_text, cls, conf in entries:
        start, end = parse_rfc3339_or_none(start_text), parse_rfc3339_or_none(end_text)
        if start is None or end is None:
            continue
        out.append(Segment(start, end, cls, conf if conf is not None else 0.0))
    return out


def _span(window: JobWindow | None, segments: Sequence[Segment]) -> tuple[float, float]:
    """The time range every plot shows: the signals' window and the whole timeline."""
    starts = [s.start for s in segments] + ([window.start] if window is not None else [])
    ends = [s.end for s in segments] + ([window.end] if window is not None else [])
    if not starts:
        return (0.0, 1.0)
    lo, hi = min(starts), max(ends)
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _plots(status: ReportStatus, window: JobWindow | None) -> str:
    parts: list[str] = []
    cls = status.bottleneck or "Unknown"
    segments = _segments(status)
    span = _span(window, segments)
    if window is None:
        parts.append(
            '<p class="muted" id="no-signals">The window\'s signals were not given, so only the verdict '
            "timeline is plotted; <code>analyze … --html FILE</code> includes them.</p>"
        )
    else:
        parts += _signal_figures(window, cls, status.capacity or [], span)
    if segments:
        caption = "Verdict timeline" if status.timeline else "Verdict (whole window; no per-window timeline)"
        parts.append(_figure(timeline_plot("timeline", caption, segments, span)))
    return "<h2>Signals over time</h2>" + "".join(parts)


def _signal_figures(
    window: JobWindow, cls: str, capacity: Sequence[CapacityItem], span: tuple[float, float]
) -> list[str]:
    """The step time, GPU activity (per pod as a heat map past a few pods) and the limiting stage."""
    parts = []
    shares = step_shares(window)
    if shares is not None:
        title = "Where the step time goes: computing and each measured wait (Job mean)"
        parts.append(_figure(stacked_plot("step-time", title, shares, span)))
    gpu = series.gpu_activity(window)
    if gpu is not None:
        parts.append(_figure(signal_plot("gpu-activity", f"GPU activity: {signal_label(gpu.signal)}", gpu, span)))
    heat = series.gpu_heatmap(window)
    if heat is not None:
        title = f"GPU activity by pod ({len(heat.pods)} pods): {signal_label(heat.signal)}"
        parts.append(_figure(heatmap_plot("gpu-heatmap", title, heat, span)))
    limiting = series.limiting_stage(window, cls, capacity)
    if limiting is not None:
        title = f"Limiting stage ({cls}): {signal_label(limiting.signal)} against its capacity"
        parts.append(_figure(signal_plot("limiting-stage", title, limiting, span)))
    if gpu is None and limiting is None:
        parts.append('<p class="muted" id="no-signals">The window holds none of the plotted signals.</p>')
    return parts


def _pods(status: ReportStatus) -> str:
    pods = status.pods or []
    if not pods:
        return ""
    rows = "".join(
        f"<tr><td>{_e(p.pod)}</td><td>{_e(p.node or '-')}</td><td>{_e(p.bottleneck)}</td>"
        f'<td class="num">{_pct(p.confidence)}</td><td class="num">{_pct(p.gpu_active)}</td></tr>'
        for p in pods
    )
    return (
        '<h2>Pods</h2><table id="pods"><thead><tr><th>Pod</th><th>Node</th><th>Bottleneck</th>'
        f"<th>Confidence</th><th>GPU active</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _stragglers(status: ReportStatus) -> str:
    """The pods (and GPUs) behind the Job's own peers, what lags and the share of the Job's time it costs."""
    entries = []
    for st in status.stragglers or []:
        where = " ".join(
            x for x in (st.pod, f"on {st.node}" if st.node else "", f"GPU {st.gpu}" if st.gpu else "") if x
        )
        lags = "; ".join(
            f"{_e(lag.signal)} {_num(lag.observed)} against the peers' {_num(lag.peers)}" for lag in st.evidence
        )
        entries.append(f"<b>{_e(where)}</b>: {_e(st.cause)}, {_pct(st.share)} of the Job's time ({lags})")
    return _items("Stragglers (against the Job's own peers)", "stragglers", entries)


def _data_quality(status: ReportStatus) -> str:
    dq = status.data_quality
    if dq is None:
        return ""
    lines = [
        f"{_e(dq.pods)} pods, {_e(dq.gpus)} GPUs, coverage {_pct(dq.coverage)}",
        "families: " + _e(", ".join(dq.families) or "none"),
    ]
    if dq.missing_families:
        lines.append("missing: " + _e(", ".join(dq.missing_families)))
    lines.extend(_e(n) for n in dq.notes)
    return _items("Data", "data-quality", lines)


def _typed(status: ReportStatus | Mapping[str, Any]) -> ReportStatus:
    # A mapping is the API form; a field whose value does not validate is left out of the page.
    return status if isinstance(status, ReportStatus) else read_status(status, drop_invalid=True)


def render_html(
    status: ReportStatus | Mapping[str, Any], *, window: JobWindow | None = None, name: str | None = None
) -> str:
    """The page as a string.

    Args:
        status: a BottleneckReport's status, typed or in its API (camelCase JSON) form.
        window: the analysed window's signals, for the signal plots; None plots the timeline only.
        name: what the page calls the Job; by default ``namespace/job`` from ``window``, else "Job".

    Returns:
        One self-contained HTML document.

    Raises:
        UsageError: matplotlib (the optional extra ``html``) is not installed.
    """
    require_matplotlib()
    status = _typed(status)
    title = name or (f"{window.namespace}/{window.job}" if window is not None else "Job")
    body = (
        f"<h1>What limits {_e(title)}</h1>"
        + _verdict(status, title)
        + _evidence(status)
        + _plots(status, window)
        + _pods(status)
        + _stragglers(status)
        + _data_quality(status)
    )
    return PAGE.substitute(title=_e(f"{title}: {status.bottleneck or 'Unknown'}"), body=body)


def write_html(
    status: ReportStatus | Mapping[str, Any], path: Path, *, window: JobWindow | None = None, name: str | None = None
) -> Path:
    """Write the page for one report (see :func:`render_html`) and return its path.

    Raises:
        PageNotWritten: the file could not be written (a usage error: the message names the file
            and the system's reason).
    """
    return write_page(render_html(status, window=window, name=name), Path(path))
