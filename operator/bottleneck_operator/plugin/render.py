"""Text output in kubectl's manner: tables with 3-space gaps, ages like ``3m12s``, colour only when asked.

Colour is decided once by the caller (:func:`use_colour`): on a terminal, unless ``NO_COLOR`` is
set or the terminal is ``dumb``; pipes and files get plain text.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TextIO

from bottleneck_operator.plugin import classes
from bottleneck_operator.reports import BottleneckReport, ReportStatus
from bottleneck_operator.reports.age import kubectl_age

# One colour per class, the same in the table and the timeline.
_COLOURS = {"IO": "33", "CPU": "35", "Interconnect": "36", "GPU": "32", "Memory": "34", "Unknown": "90"}
SPARKS = "▁▂▃▄▅▆▇█"


def use_colour(stream: TextIO) -> bool:
    """Colour for this stream: a terminal, no ``NO_COLOR`` (https://no-color.org), not a dumb terminal."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, cls: str | None, colour: bool) -> str:
    """``text`` in the class's colour when colour is on."""
    code = _COLOURS.get(cls or "")
    return f"\x1b[{code}m{text}\x1b[0m" if colour and code and text else text


def bold(text: str, colour: bool) -> str:
    return f"\x1b[1m{text}\x1b[0m" if colour and text else text


age = kubectl_age  # the plugin's tables and the demo's show ages alike


def pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.0f}%"


# A verdict of a known class whose headroom nothing measured (an Interconnect wait on a link whose
# capacity is not exported, GPUs whose busy share was not read): kubectl's word for a value that could
# not be read, as `kubectl get hpa` shows a metric not yet fetched. `<none>`: no verdict to bound.
UNMEASURED = "<unknown>"


def headroom_text(status: ReportStatus, digits: int = 1) -> str:
    """The headroom as the CRD's printer column gives it, the bound alone (no low end is reported)."""
    if status.headroom is not None:
        return f"{status.headroom.high:.{digits}f}x"
    return UNMEASURED if status.bottleneck not in (None, "Unknown") else "<none>"


def table(rows: Sequence[Sequence[str]], colour_column: int | None = None, colour: bool = False) -> str:
    """Left-aligned columns, 3-space gaps, header first; ``colour_column`` painted by its class."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        cells = []
        for i, (cell, w) in enumerate(zip(row, widths, strict=True)):
            padded = cell.ljust(w)
            if n and i == colour_column:
                padded = paint(cell, cell, colour) + " " * (w - len(cell))
            cells.append(padded)
        out.append("   ".join(cells).rstrip())
    return "\n".join(out)


def report_rows(
    reports: Sequence[BottleneckReport], *, all_namespaces: bool, wide: bool, now: float | None = None
) -> list[list[str]]:
    """The ``list`` table, header first: kubectl get bnr's columns, plus the wide ones with ``-o wide``."""
    at = time.time() if now is None else now
    header = ["NAME", "JOB", "BOTTLENECK", "CONFIDENCE", "GPU", "PHASE", "AGE"]
    if wide:
        header += ["MECHANISM", "SECONDARY", "HEADROOM", "REASON"]
    rows = [(["NAMESPACE"] if all_namespaces else []) + header]
    for r in reports:
        status = r.status
        row = [
            r.name,
            r.job_name,
            status.bottleneck or "",
            pct(status.confidence),
            pct(status.gpu_active),
            status.phase if r.analysed else "",
            age(r.created, at),
        ]
        if wide:
            row += [
                str(status.mechanism or "<none>"),
                status.secondary or "<none>",
                headroom_text(status) if r.analysed else "<none>",
                status.reason or "",
            ]
        rows.append(([r.namespace] if all_namespaces else []) + row)
    return rows


def explain_text(cls: classes.ClassText, colour: bool) -> str:
    """``explain CLASS`` as a terminal reads it."""
    lines = [
        f"{bold('CLASS:', colour)}    {paint(cls.name.value, cls.name.value, colour)}",
        "",
        bold("MEANING:", colour),
    ]
    lines += [f"  {cls.meaning}", "", bold("MECHANISMS:", colour)]
    lines += [f"  {name}\n    {signature}." for name, signature in cls.mechanisms]
    lines += ["", bold("WHAT TO TRY:", colour)]
    lines += [f"  {n}. {action}\n     {detail}" for n, (action, detail) in enumerate(classes.what_to_try(cls), 1)]
    return "\n".join(lines)
