"""Reports printed as ``kubectl get bnr -A`` shows them, plus one evidence/recommendation line each."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bottleneck_operator.reports import BottleneckReport, ReportStatus, as_report
from bottleneck_operator.reports.age import kubectl_age

_age = kubectl_age


def _num(value: Any) -> str:
    return "" if value is None else f"{float(value):g}"


# kubectl's columns for the report kind, in order: (header, cell from the report and its typed status).
# A new printer column of the CRD is one entry here.
CHANGE = "→"  # joins the classes a Job went through, in order
_Cell = Callable[[BottleneckReport, ReportStatus, float], str]
COLUMN_CELLS: tuple[tuple[str, _Cell], ...] = (
    ("NAMESPACE", lambda r, s, now: r.namespace),
    ("NAME", lambda r, s, now: r.name),
    ("JOB", lambda r, s, now: r.job_name),
    ("BOTTLENECK", lambda r, s, now: s.bottleneck or ""),
    ("CONFIDENCE", lambda r, s, now: _num(s.confidence)),
    ("GPU", lambda r, s, now: _num(s.gpu_active)),
    ("PHASE", lambda r, s, now: s.phase if r.analysed else ""),
    ("AGE", lambda r, s, now: _age(r.created, now)),
)
COLUMNS = tuple(header for header, _ in COLUMN_CELLS)
# ``-o wide`` adds the CRD's priority-1 columns in their place: the mechanism after the class
# (kubectl's "<none>" for an absent field).
_WIDE_EXTRA: tuple[tuple[str, _Cell], ...] = (("MECHANISM", lambda r, s, now: str(s.mechanism or "<none>")),)
_AFTER = COLUMNS.index("BOTTLENECK") + 1
WIDE_CELLS = (*COLUMN_CELLS[:_AFTER], *_WIDE_EXTRA, *COLUMN_CELLS[_AFTER:])
WIDE_COLUMNS = tuple(header for header, _ in WIDE_CELLS)


Reports = Sequence[BottleneckReport | Mapping[str, Any]]  # typed, or as the API returns them


def _sorted(reports: Reports) -> list[BottleneckReport]:
    return sorted((as_report(r) for r in reports), key=lambda r: (r.namespace, r.name))


def rows(reports: Reports, now: float | None = None, *, wide: bool = False) -> list[tuple[str, ...]]:
    """One row per report, in kubectl's column order (``wide``: as ``-o wide``), sorted by namespace and name."""
    at = time.time() if now is None else now
    cells = WIDE_CELLS if wide else COLUMN_CELLS
    return [tuple(cell(r, r.status, at) for _, cell in cells) for r in _sorted(reports)]


def format_table(reports: Reports, now: float | None = None, *, wide: bool = False) -> str:
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


def _mechanism_part(status: ReportStatus, truth: str | None, known: bool) -> tuple[str | None, bool]:
    """The report's mechanism for its line, checked against the simulated one when ``known``; (text, match)."""
    if not status.mechanism:
        return None, False
    if not known or truth is None:
        return f"mechanism {status.mechanism}", False
    ok = status.mechanism == truth
    return f"mechanism {status.mechanism} ({'match' if ok else f'simulated {truth}: MISS'})", ok


def format_details(
    reports: Reports,
    truth: Mapping[str, str] | None = None,
    mechanisms: Mapping[str, str | None] | None = None,
) -> str:
    """One line per report: its telling evidence, first recommendation, headroom (or why it is Unknown).

    Args:
        reports: BottleneckReports (typed, or as the API returns them).
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
        status, name = r.status, r.key
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
