"""The page: the verdict, its evidence, plots of the Job's signals, the verdict timeline, the pods.

Everything comes from the status's API form (camelCase JSON, as the CRD defines it), read
defensively: a field the status lacks is left out of the page, never an error. Every value from the
status is HTML-escaped, since pod names and messages are not ours.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bottleneck_operator.contract.labels import signal_label
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.html import series
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


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: object) -> str:
    return f"{100 * float(value):.0f} %" if isinstance(value, int | float) else "n/a"


def _num(value: object) -> str:
    return f"{float(value):.3g}" if isinstance(value, int | float) else ""


def _seconds(iso: object) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00").replace("z", "+00:00")).timestamp()
    except ValueError:
        return None


def _list(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = status.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _badge(cls: object) -> str:
    colour = CLASS_COLOURS.get(str(cls), CLASS_COLOURS["Unknown"])
    return f'<span class="badge" style="background:{colour}">{_e(cls)}</span>'


def _verdict(status: Mapping[str, Any], title: str) -> str:
    window = status.get("window") if isinstance(status.get("window"), Mapping) else {}
    facts = [("Job", title)]
    if status.get("secondary"):
        facts.append(("Secondary", status["secondary"]))
    facts += [("Confidence", _pct(status.get("confidence"))), ("GPU active", _pct(status.get("gpuActive")))]
    if status.get("phase"):
        facts.append(("Phase", status["phase"]))
    if window:
        facts.append(
            ("Window", f"{window.get('start', '?')} .. {window.get('end', '?')} ({_num(window.get('seconds'))} s)")
        )
    head = status.get("headroom")
    if isinstance(head, Mapping):
        facts.append(("Headroom", f"{_num(head.get('low'))}x .. {_num(head.get('high'))}x ({head.get('basis', '')})"))
    if status.get("modelVersion"):
        facts.append(("Model", status["modelVersion"]))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
    reason = f'<div class="reason">{_e(status["reason"])}</div>' if status.get("reason") else ""
    return (
        f'<section class="card" id="verdict"><div class="verdict">{_badge(status.get("bottleneck", "Unknown"))}'
        f'<dl class="facts">{dl}</dl></div>{reason}{_probabilities(status)}</section>'
    )


def _probabilities(status: Mapping[str, Any]) -> str:
    probs = status.get("probabilities")
    if not isinstance(probs, Mapping) or not probs:
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


def _evidence(status: Mapping[str, Any]) -> str:
    ev = []
    for e in _list(status, "evidence"):
        ref = f", reference {_num(e['reference'])}" if isinstance(e.get("reference"), int | float) else ""
        ev.append(
            f'{_e(e.get("message", ""))} <span class="muted">({_e(signal_label(str(e.get("signal", ""))))}: '
            f"{_e(_num(e.get('observed')))} {_e(e.get('unit', ''))}{_e(ref)})</span>"
        )
    recs = [
        f'<strong>{_e(r.get("action", ""))}</strong> <span class="muted">[{_e(signal_label(str(r.get("signal", ""))))}]</span>: '
        f"{_e(r.get('detail', ''))}"
        for r in _list(status, "recommendations")
    ]
    caps = [_e(c.get("message", "")) for c in _list(status, "capacity")]
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


def _segments(status: Mapping[str, Any]) -> list[Segment]:
    """The status's timeline, or one segment for the whole window when it has none."""
    entries = _list(status, "timeline")
    if not entries and isinstance(status.get("window"), Mapping):
        w = status["window"]
        entries = [{"start": w.get("start"), "end": w.get("end"), **status}]
    out: list[Segment] = []
    for t in entries:
        start, end = _seconds(t.get("start")), _seconds(t.get("end"))
        if start is None or end is None:
            continue
        conf = t.get("confidence")
        out.append(
            Segment(
                start, end, str(t.get("bottleneck", "Unknown")), float(conf) if isinstance(conf, int | float) else 0.0
            )
        )
    return out


def _span(window: JobWindow | None, segments: Sequence[Segment]) -> tuple[float, float]:
    """The time range every plot shows: the signals' window and the whole timeline."""
    starts = [s.start for s in segments] + ([window.start] if window is not None else [])
    ends = [s.end for s in segments] + ([window.end] if window is not None else [])
    if not starts:
        return (0.0, 1.0)
    lo, hi = min(starts), max(ends)
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _plots(status: Mapping[str, Any], window: JobWindow | None) -> str:
    parts: list[str] = []
    cls = str(status.get("bottleneck", "Unknown"))
    segments = _segments(status)
    span = _span(window, segments)
    if window is None:
        parts.append(
            '<p class="muted" id="no-signals">The window\'s signals were not given, so only the verdict '
            "timeline is plotted; <code>analyze … --html FILE</code> includes them.</p>"
        )
    else:
        parts += _signal_figures(window, cls, _list(status, "capacity"), span)
    if segments:
        caption = "Verdict timeline" if _list(status, "timeline") else "Verdict (whole window; no per-window timeline)"
        parts.append(_figure(timeline_plot("timeline", caption, segments, span)))
    return "<h2>Signals over time</h2>" + "".join(parts)


def _signal_figures(
    window: JobWindow, cls: str, capacity: Sequence[Mapping[str, Any]], span: tuple[float, float]
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


def _pods(status: Mapping[str, Any]) -> str:
    pods = _list(status, "pods")
    if not pods:
        return ""
    rows = "".join(
        f"<tr><td>{_e(p.get('pod', ''))}</td><td>{_e(p.get('node') or '-')}</td><td>{_e(p.get('bottleneck', ''))}</td>"
        f'<td class="num">{_pct(p.get("confidence"))}</td><td class="num">{_pct(p.get("gpuActive"))}</td></tr>'
        for p in pods
    )
    return (
        '<h2>Pods</h2><table id="pods"><thead><tr><th>Pod</th><th>Node</th><th>Bottleneck</th>'
        f"<th>Confidence</th><th>GPU active</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _data_quality(status: Mapping[str, Any]) -> str:
    dq = status.get("dataQuality")
    if not isinstance(dq, Mapping):
        return ""
    lines = [
        f"{_e(dq.get('pods', 0))} pods, {_e(dq.get('gpus', 0))} GPUs, coverage {_pct(dq.get('coverage'))}",
        "families: " + _e(", ".join(map(str, dq.get("families") or [])) or "none"),
    ]
    if dq.get("missingFamilies"):
        lines.append("missing: " + _e(", ".join(map(str, dq["missingFamilies"]))))
    lines.extend(_e(n) for n in dq.get("notes") or [])
    return _items("Data", "data-quality", lines)


def render_html(status: Mapping[str, Any], *, window: JobWindow | None = None, name: str | None = None) -> str:
    """The page as a string.

    Args:
        status: a BottleneckReport's ``.status`` in its API (camelCase JSON) form.
        window: the analysed window's signals, for the signal plots; None plots the timeline only.
        name: what the page calls the Job; by default ``namespace/job`` from ``window``, else "Job".

    Returns:
        One self-contained HTML document.

    Raises:
        UsageError: matplotlib (the optional extra ``html``) is not installed.
    """
    require_matplotlib()
    title = name or (f"{window.namespace}/{window.job}" if window is not None else "Job")
    body = (
        f"<h1>What limits {_e(title)}</h1>"
        + _verdict(status, title)
        + _evidence(status)
        + _plots(status, window)
        + _pods(status)
        + _data_quality(status)
    )
    return PAGE.substitute(title=_e(f"{title}: {status.get('bottleneck', 'Unknown')}"), body=body)


def write_html(
    status: Mapping[str, Any], path: Path, *, window: JobWindow | None = None, name: str | None = None
) -> Path:
    """Write the page for one report (see :func:`render_html`) and return its path.

    Raises:
        OSError: the file could not be written (the caller turns it into a user-facing message).
    """
    path = Path(path)
    path.write_text(render_html(status, window=window, name=name), encoding="utf-8")
    return path
