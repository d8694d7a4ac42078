"""Reports printed as ``kubectl get bnr -A`` shows them, plus one evidence/recommendation line each."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bottleneck_operator.reports import ReportStatus, read_status
from bottleneck_operator.reports.age import kubectl_age

_age = kubectl_age


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
# ``-o wide`` adds the CRD's priority-1 columns in their place: the mechanism after the class
# (kubectl's "<none>" for an absent field).
_WIDE_EXTRA: tuple[tuple[str, _Cell], ...] = (("MECHANISM", lambda r, s, now: str(s.mechanism or "<none>")),)
_AFTER = COLUMNS.index("BOTTLENECK") + 1
WIDE_CELLS = (*COLUMN_CELLS[:_AFTER], *_WIDE_EXTRA, *COLUMN_CELLS[_AFTER:])
WIDE_COLUMNS = tuple(header for header, _ in WIDE_CELLS)


def _sorted(reports: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(reports, key=lambda r: (r["metadata"].get("namespace", ""), r["metadata"]["name"]))


def rows(
    reports: Sequence[Mapping[str, Any]], now: float | None = None, *, wide: bool = False
) -> list[tuple[str, ...]]:
    """One row per report, in kubectl's column order (``wide``: as ``-o wide``), sorted by namespace and name."""
    at = time.time() if now is None else now
    cells = WIDE_CELLS if wide else COLUMN_CELLS
    return [tuple(cell(r, typed_status(r), at) for _, cell in cells) for r in _sorted(reports)]


def format_table(reports: Sequence[Mapping[str, Any]], now: float | None = None, *, wide: bool = False) -> str:
    """The reports as ``kubectl get bnr -A`` (``wide``: ``-o wide``) would print them (left-aligned, 3-space gaps)."""
    columns = WIDE_COLUMNS if wide else COLUMNS
    table = [columns, *rows(reports, now, wide=wide)]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
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
    return read_status(report.get("status"))


def _mechanism_part(status: ReportStatus, truth: str | None, known: bool) -> tuple[str | None, bool]:
    """The report's mechanism for its line, checked against the simulated one when ``known``; (text, match)."""
    if not status.mechanism:
        return None, False
    if not known or truth is None:
        return f"mechanism {status.mechanism}", False
    ok = status.mechanism == truth
    return f"mechanism {status.mechanism} ({'match' if ok else f'simulated {truth}: MISS'})", ok


def format_details(
    reports: Sequence[Mapping[str, Any]],
    truth: Mapping[str, str] | None = None,
    mechanisms: Mapping[str, str | None] | None = None,
) -> str:
    """One line per report: its telling evidence, first recommendation, headroom (or why it is Unknown).

    Args:
        reports: BottleneckReport objects.
        truth: "namespace/name" -> the bottleneck the simulator built into that Job ("IO→GPU" for one that
            changes: the final report should show the last); when given, each line says whether the verdict
            matches and a last line counts the matches.
        mechanisms: "namespace/name" -> the mechanism the simulator built in; when given, each named
            mechanism is checked against it and a last line counts the matches.

    Returns:
        The lines joined with newlines.
    """
    lines = []
    matched = mech_named = mech_matched = 0
    for r in _sorted(reports):
        status = typed_status(r)
        name = f"{r['metadata'].get('namespace', '')}/{r['metadata']['name']}"
        parts = []
        if truth is not None and name in truth:
            ok = status.bottleneck == truth[name].split(CHANGE)[-1]
            matched += ok
            parts.append(f"simulated {truth[name]}: {'match' if ok else 'MISS'}")
        known = mechanisms is not None and name in mechanisms
        mech, mech_ok = _mechanism_part(status, mechanisms.get(name) if mechanisms else None, known)
        if mech:
            parts.append(mech)
            if known and mechanisms and mechanisms.get(name):
                mech_named += 1
                mech_matched += mech_ok
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
    count = len(lines)
    if truth is not None:
        lines.append(f"\n{matched} of {count} verdicts match the bottleneck the simulator built in.")
    if mechanisms is not None:
        lines.append(f"{mech_matched} of {mech_named} named mechanisms match the one the simulator built in.")
    return "\n".join(lines)
