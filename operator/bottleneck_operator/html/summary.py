"""The ClusterBottleneckSummary as one offline HTML page: what limits the cluster, where, and what
fixing it is worth.

Read from the summary's status in its API form (camelCase JSON), defensively as the report page is:
a missing field leaves its section out. Every value is HTML-escaped (namespaces, pods and
messages are not ours). Bars are plain CSS, so the page needs no plotting library.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bottleneck_operator.html.output import write_page
from bottleneck_operator.html.plots import CLASS_COLOURS
from bottleneck_operator.html.template import PAGE


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _list(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = status.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _num(value: object, digits: int = 1) -> str:
    return f"{float(value):,.{digits}f}" if isinstance(value, int | float) else ""


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def _bars(values: Mapping[str, Any], unit: str) -> str:
    numbers = {k: float(v) for k, v in values.items() if isinstance(v, int | float) and v}
    top = max(numbers.values(), default=0.0) or 1.0
    rows = []
    for cls, v in sorted(numbers.items(), key=lambda kv: -kv[1]):
        colour = CLASS_COLOURS.get(cls, CLASS_COLOURS["Unknown"])
        width = 100 * v / top
        rows.append(
            f'<div>{_e(cls)}</div><div class="bar" style="width:{width:.1f}%;background:{colour}"></div>'
            f"<div>{_e(_num(v))} {_e(unit)}</div>"
        )
    return f'<div class="probs">{"".join(rows)}</div>' if rows else '<p class="muted">none</p>'


def _overview(status: Mapping[str, Any]) -> str:
    facts = [
        ("Jobs", _e(status.get("jobs", 0))),
        ("GPU-hours", _e(_num(status.get("gpuHours")))),
        ("GPU-hours lost", _e(_num(status.get("gpuHoursLost")))),
        ("Costliest bottleneck", _e(status.get("topBottleneck") or "none")),
        ("Hot spots", _e(status.get("hotSpotCount", 0))),
        ("Stragglers", _e(status.get("stragglersTotal", 0))),
    ]
    window = status.get("window")
    if isinstance(window, Mapping):
        facts.append(("Window", f"{_e(window.get('start'))} to {_e(window.get('end'))}"))
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    return f'<div class="card"><dl class="facts">{items}</dl></div>'


def _sections(status: Mapping[str, Any]) -> list[str]:
    out = [
        "<h2>Jobs by class</h2>" + _bars(status.get("byClass") or {}, "Jobs"),
        "<h2>GPU-hours lost by class</h2>"
        + '<p class="muted">Idle GPU time, charged to the bottleneck that kept each Job waiting.</p>'
        + _bars(status.get("lostByClass") or {}, "GPU-h"),
    ]
    actions = _list(status, "topRecommendations")
    if actions:
        rows = [
            [_e(a.get("action")), _e(a.get("bottleneck")), _e(a.get("jobs")), _e(_num(a.get("gpuHours")))]
            for a in actions
        ]
        out.append("<h2>What to fix first</h2>" + _table(["Action", "Class", "Jobs", "GPU-h recovered"], rows, (2, 3)))
    spots = _list(status, "hotSpots")
    if spots:
        rows = [
            [
                _e(h.get("message")),
                _e(f"{float(h.get('pValue', 1.0)):.2g}"),
                _e(", ".join(map(str, h.get("examples") or []))),
            ]
            for h in spots
        ]
        out.append("<h2>Hot spots</h2>" + _table(["Finding", "p-value", "Jobs, for example"], rows))
    suspects = _list(status, "suspects")
    if suspects:
        rows = [[_e(s.get("message")), _e(f"{float(s.get('pValue', 1.0)):.2g}")] for s in suspects]
        out.append("<h2>Suspect nodes and GPUs</h2>" + _table(["Finding", "p-value"], rows))
    stragglers = _list(status, "stragglers")
    if stragglers:
        rows = [
            [_e(f"{s.get('namespace')}/{s.get('job')}"), _e(s.get("pod")), _e(s.get("node") or ""),
             _e(s.get("gpu") or "all"), _e(s.get("cause")), _e(f"{100 * float(s.get('share', 0)):.0f} %")]
            for s in stragglers
        ]  # fmt: skip
        out.append("<h2>Stragglers</h2>" + _table(["Job", "Pod", "Node", "GPU", "Cause", "Time lost"], rows, (5,)))
    losses = _list(status, "lostByNamespace")
    if losses:
        rows = [[_e(x.get("namespace")), _e(x.get("bottleneck")), _e(_num(x.get("gpuHours")))] for x in losses]
        out.append("<h2>GPU-hours lost by namespace</h2>" + _table(["Namespace", "Class", "GPU-h"], rows, (2,)))
    return out


def render_summary_html(status: Mapping[str, Any], *, title: str = "Cluster bottleneck summary") -> str:
    """The page for a ClusterBottleneckSummary's status (API form)."""
    body = f"<h1>{_e(title)}</h1>" + _overview(status) + "".join(_sections(status))
    return PAGE.substitute(title=_e(title), body=body)


def write_summary_html(status: Mapping[str, Any], path: Path) -> Path:
    """Write the page to ``path`` and return it.

    Raises:
        PageNotWritten: the file could not be written (see :func:`~bottleneck_operator.html.output.write_page`).
    """
    return write_page(render_summary_html(status), Path(path))
