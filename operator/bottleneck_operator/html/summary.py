"""The ClusterBottleneckSummary as one offline HTML page: what limits the cluster, where, and what
fixing it is worth.

Rendered from the typed status (:class:`~bottleneck_operator.reports.summary.SummaryStatus`); a
status in its API form (camelCase JSON) is read through the models first, leniently as the report
page's is: what does not validate is left out, and an empty list leaves its section out. Every
value is HTML-escaped (namespaces, pods and messages are not ours). Bars are plain CSS, so the page
needs no plotting library.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bottleneck_operator.html.output import write_page
from bottleneck_operator.html.plots import CLASS_COLOURS
from bottleneck_operator.html.template import PAGE
from bottleneck_operator.reports.summary import SummaryStatus
from bottleneck_operator.reports.summary_document import as_summary_status


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def _bars(values: Mapping[str, float], unit: str) -> str:
    numbers = {k: float(v) for k, v in values.items() if v}
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


def _overview(status: SummaryStatus) -> str:
    facts = [
        ("Jobs", _e(status.jobs)),
        ("GPU-hours", _e(_num(status.gpu_hours))),
        ("GPU-hours lost", _e(_num(status.gpu_hours_lost))),
        ("Costliest bottleneck", _e(status.top_bottleneck or "none")),
        ("Hot spots", _e(status.hot_spot_count)),
        ("Stragglers", _e(status.stragglers_total)),
    ]
    if status.window is not None:
        facts.append(("Window", f"{_e(status.window.start)} to {_e(status.window.end)}"))
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    return f'<div class="card"><dl class="facts">{items}</dl></div>'


def _sections(status: SummaryStatus) -> list[str]:
    out = [
        "<h2>Jobs by class</h2>" + _bars(status.by_class, "Jobs"),
        "<h2>GPU-hours lost by class</h2>"
        + '<p class="muted">Idle GPU time, charged to the bottleneck that kept each Job waiting.</p>'
        + _bars(status.lost_by_class, "GPU-h"),
    ]
    if status.top_recommendations:
        rows = [[_e(a.action), _e(a.bottleneck), _e(a.jobs), _e(_num(a.gpu_hours))] for a in status.top_recommendations]
        out.append("<h2>What to fix first</h2>" + _table(["Action", "Class", "Jobs", "GPU-h recovered"], rows, (2, 3)))
    if status.hot_spots:
        rows = [[_e(h.message), _e(f"{h.p_value:.2g}"), _e(", ".join(h.examples))] for h in status.hot_spots]
        out.append("<h2>Hot spots</h2>" + _table(["Finding", "p-value", "Jobs, for example"], rows))
    if status.suspects:
        rows = [[_e(s.message), _e(f"{s.p_value:.2g}")] for s in status.suspects]
        out.append("<h2>Suspect nodes and GPUs</h2>" + _table(["Finding", "p-value"], rows))
    if status.stragglers:
        rows = [
            [_e(f"{s.namespace}/{s.job}"), _e(s.pod), _e(s.node or ""), _e(s.gpu or "all"), _e(s.cause),
             _e(f"{100 * s.share:.0f} %")]
            for s in status.stragglers
        ]  # fmt: skip
        out.append("<h2>Stragglers</h2>" + _table(["Job", "Pod", "Node", "GPU", "Cause", "Time lost"], rows, (5,)))
    if status.lost_by_namespace:
        rows = [[_e(x.namespace), _e(x.bottleneck), _e(_num(x.gpu_hours))] for x in status.lost_by_namespace]
        out.append("<h2>GPU-hours lost by namespace</h2>" + _table(["Namespace", "Class", "GPU-h"], rows, (2,)))
    return out


def render_summary_html(status: SummaryStatus | Mapping[str, Any], *, title: str = "Cluster bottleneck summary") -> str:
    """The page for a ClusterBottleneckSummary's status, typed or in its API (camelCase JSON) form."""
    status = as_summary_status(status)
    body = f"<h1>{_e(title)}</h1>" + _overview(status) + "".join(_sections(status))
    return PAGE.substitute(title=_e(title), body=body)


def write_summary_html(status: SummaryStatus | Mapping[str, Any], path: Path) -> Path:
    """Write the page to ``path`` and return it.

    Raises:
        PageNotWritten: the file could not be written (see :func:`~bottleneck_operator.html.output.write_page`).
    """
    return write_page(render_summary_html(status), Path(path))
