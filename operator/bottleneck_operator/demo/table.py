"""Reports printed as ``kubectl get bnr -A`` shows them, plus one evidence/recommendation line each."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from bottleneck_operator.reports import ReportStatus


def _age(created: str | None, now: float) -> str:
    """kubectl's short age: 45s, 3m12s, 2h5m, 4d."""
    if not created:
        return "<unknown>"
    try:
        seconds = max(0, int(now - datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()))
    except ValueError:
        return "<unknown>"
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 600:
        return f"{seconds // 60}m{seconds % 60}s"
    if seconds < 3 * 3600:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60}m"
    return f"{seconds // 86400}d"


def _num(value: Any) -> str:
    return "" if value is None else f"{float(value):g}"


# kubectl's columns for the report kind, in order: (header, cell from the report and its typed status).
# A new printer column of the CRD is one entry here.
CHANGE = "→"  # joins the classes a Job went through, in order
_Cell = Callable[[Mapping[str, Any], ReportStatus, float], str]
COLUMN_CELLS: tuple[tuple[str, _Cell], ...] = (
    ("NAMESPACE", lambda r, s, now: str(r["metadata"].get("namespace", ""))),
    ("NAME", lambda r, s, now: str(r["metadata"].get("name", ""))),
    ("JOB", lambda r, s, now: str(((r.get("spec") or {}).get("jobRef") or {}).get("name", ""))),
    ("BOTTLENECK", lambda r, s, now: s.bottleneck or ""),
    ("CONFIDENCE", lambda r, s, now: _num(s.confidence)),
    ("GPU", lambda r, s, now: _num(s.gpu_active)),
    ("PHASE", lambda r, s, now: s.phase if r.get("status") else ""),
    ("AGE", lambda r, s, now: _age(r["metadata"].get("creationTimestamp"), now)),
)
COLUMNS = tuple(header for header, _ in COLUMN_CELLS)


def _sorted(reports: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(reports, key=lambda r: (r["metadata"].get("namespace", ""), r["metadata"]["name"]))


def rows(reports: Sequence[Mapping[str, Any]], now: float | None = None) -> list[tuple[str, ...]]:
    """One row per report, in kubectl's column order, sorted by namespace and name."""
    at = time.time() if now is None else now
    return [tuple(cell(r, typed_status(r), at) for _, cell in COLUMN_CELLS) for r in _sorted(reports)]


def format_table(reports: Sequence[Mapping[str, Any]], now: float | None = None) -> str:
    """The reports as ``kubectl get bnr -A`` would print them (left-aligned, 3-space gaps)."""
    table = [COLUMNS, *rows(reports, now)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    return "\n".join("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table)


# The signals the "GPUs were active x % of the time" summary is drawn from (the best one available).
_ACTIVITY_SIGNALS = frozenset({"gpu_active", "sm_active", "gr_engine_active", "gpu_util"})


def _evidence_line(status: ReportStatus) -> str | None:
    """The evidence item most specific to the verdict: the first one past the GPU-activity summary when present."""
    evidence = status.evidence or []
    if not evidence:
        return None
    specific = [e for e in evidence if e.signal not in _ACTIVITY_SIGNALS]
    return (specific or evidence)[0].message.rstrip(".")


def typed_status(report: Mapping[str, Any]) -> ReportStatus:
    """A report's status as the typed model (the API's camelCase read through the aliases).

    Fields this version does not know (a newer operator's) are left out rather than refused: the demo
    shows what it can read.
    """
    raw = report.get("status") or {}
    known = {f.alias or name for name, f in ReportStatus.model_fields.items()} | set(ReportStatus.model_fields)
    return ReportStatus.model_validate({k: v for k, v in raw.items() if k in known})


def format_details(reports: Sequence[Mapping[str, Any]], truth: Mapping[str, str] | None = None) -> str:
    """One line per report: its telling evidence, first recommendation, headroom (or why it is Unknown).

    Args:
        reports: BottleneckReport objects.
        truth: "namespace/name" -> the bottleneck the simulator built into that Job ("IO→GPU" for one that
            changes: the final report should show the last); when given, each line says whether the verdict
            matches and a last line counts the matches.

    Returns:
        The lines joined with newlines.
    """
    lines = []
    matched = 0
    for r in _sorted(reports):
        status = typed_status(r)
        name = f"{r['metadata'].get('namespace', '')}/{r['metadata']['name']}"
        parts = []
        if truth is not None and name in truth:
            ok = status.bottleneck == truth[name].split(CHANGE)[-1]
            matched += ok
            parts.append(f"simulated {truth[name]}: {'match' if ok else 'MISS'}")
        evidence = _evidence_line(status)
        if evidence:
            parts.append(f"evidence: {evidence}")
        if status.recommendations:
            parts.append(f"try: {status.recommendations[0].action.rstrip('.')}")
        if status.headroom:
            parts.append(f"headroom x{status.headroom.low:.1f}-{status.headroom.high:.1f}")
        if not status.bottleneck or status.bottleneck == "Unknown":
            parts.append(status.reason or "no verdict yet")
        lines.append(f"  {name}: " + "; ".join(parts))
    if truth is not None:
        lines.append(f"\n{matched} of {len(lines)} verdicts match the bottleneck the simulator built in.")
    return "\n".join(lines)
