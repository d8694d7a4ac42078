"""The evaluation as printed text: confusion matrices, per-class figures, invariants, breakdowns, errors.

Reads the report dict that :func:`.evaluation.score` builds (and ``commands/evaluate.py`` completes with
rounds, queries and the sidecar's gain), so the text and the JSON carry the same figures.
"""

from __future__ import annotations

from typing import Any

from bottleneck_operator.analysis.evaluation.metrics import ClassFigures, Figures, format_confusion, format_per_class
from bottleneck_operator.analysis.evaluation.scoring import STALL_BAR

__all__ = ["format_report", "mechanism_lines"]


def mechanism_lines(mechanisms: dict[str, Any]) -> list[str]:
    """The mechanism accuracies as printed lines (empty when the report has none)."""
    if not mechanisms:
        return []
    lines = [
        "== mechanisms (accuracy over jobs whose class is right; end to end: class and mechanism right)",
        f"{'mechanism':<24}{'jobs':>6}{'class ok':>10}{'accuracy':>10}{'end to end':>12}",
    ]
    for name, d in mechanisms.items():
        lines.append(f"{name:<24}{d['jobs']:>6}{d['n']:>10}{d['accuracy']:>10.3f}{d['end_to_end']:>12.3f}")
    return lines


def _figures(d: dict[str, Any]) -> Figures:
    """A report's figures dict back as :class:`Figures`."""
    return Figures(
        n=d["n"],
        confusion=d["confusion"],
        per_class={
            k: ClassFigures(v["precision"], v["recall"], v["f1"], v["support"]) for k, v in d["per_class"].items()
        },
        macro_f1=d["macro_f1"],
        accuracy=d["accuracy"],
        abstention=d["abstention"],
        ece=d["ece"],
    )


def format_report(report: dict[str, Any]) -> str:
    """The evaluation as printed text."""
    o = report["overall"]
    m, b = _figures(o["model"]), _figures(o["baseline"])
    lines = [
        f"model {report['model_version']} on {report['jobs']} held-out jobs (seed {report['seed']}, "
        f"{report.get('rounds', 1)} rounds), {report['queries']} Prometheus queries",
        "",
        "== model: confusion matrix",
        format_confusion(m),
        "",
        "== model: per class",
        format_per_class(m),
        f"macro-F1 {m.macro_f1:.3f}  accuracy {m.accuracy:.3f}  abstention {m.abstention:.3f}  ECE {m.ece:.3f}",
        "",
        "== baseline (threshold rules): confusion matrix",
        format_confusion(b),
        "",
        "== baseline: per class",
        format_per_class(b),
        f"macro-F1 {b.macro_f1:.3f}  accuracy {b.accuracy:.3f}",
        "",
    ]
    if report.get("abstentions"):
        kinds = ", ".join(f"{k} {n}" for k, n in report["abstentions"].items())
        lines += [f"abstentions by kind: {kinds}", ""]
    lines += _invariant_lines(report.get("invariants"))
    lines += _side_by_side(report)
    lines += ["", *mechanism_lines(report.get("mechanisms") or {})]
    lines += _sidecar_lines(report.get("sidecar_gain") or {})
    lines += _error_lines(report.get("errors", []))
    return "\n".join(lines)


def _invariant_lines(inv: dict[str, int] | None) -> list[str]:
    if not inv:
        return []
    return [
        f"== invariants over {inv['verdicts']} verdicts (each must be 0)",
        f"stall class with headroom < x{STALL_BAR:.2f}: {inv['stall_headroom_below_bar']}",
        f"framebuffer fill as evidence: {inv['fb_as_evidence']}",
        f"evidence, headroom or capacity against the mechanism: {inv.get('mechanism_contradicted', 0)}",
        "",
    ]


def _side_by_side(report: dict[str, Any]) -> list[str]:
    def row(name: str, d: dict[str, Any]) -> str:
        mm, bb = d["model"], d["baseline"]
        return (
            f"{name:<34}{d['n']:>5}{mm['macro_f1']:>10.3f}{mm['accuracy']:>7.3f}{mm['abstention']:>7.3f}"
            f"{bb['macro_f1']:>10.3f}{bb['accuracy']:>7.3f}"
        )

    lines = [
        "== side by side (macro-F1 / accuracy / abstention; baseline macro-F1 / accuracy)",
        f"{'group':<34}{'n':>5}{'model F1':>10}{'acc':>7}{'abst':>7}{'rules F1':>10}{'acc':>7}",
        row("all", report["overall"]),
        row("hard cases (any tag)", report["hard_cases"]),
    ]
    for key, groups in report["breakdowns"].items():
        for name, d in groups.items():
            lines.append(row(f"{key}={name}", d))
    return lines


def _sidecar_lines(gain: dict[str, Any]) -> list[str]:
    if not gain:
        return []
    lines = [
        "",
        "== what the collector sidecar adds (same windows, its signals taken out; accuracy)",
        f"{'group':<34}{'n':>5}{'with':>10}{'without':>10}{'gain':>8}",
    ]
    for name, d in gain.items():
        lines.append(f"{name:<34}{d['n']:>5}{d['with']:>10.3f}{d['without']:>10.3f}{d['with'] - d['without']:>+8.3f}")
    return lines


def _error_lines(errors: list[dict[str, Any]]) -> list[str]:
    lines = ["", f"== model: misclassified jobs ({len(errors)})"]
    for e in errors:
        why = f" ({e['reason']})" if e.get("reason") else ""
        lines.append(
            f"{e['job']}: {e['truth']} -> {e['verdict']} p={e['confidence']:.2f}{why} "
            f"[{e['fieldset']}, {e['scrape']} s; {','.join(e['tags']) or 'no tags'}]"
        )
        lines.append(f"    {e['signals']}")
    return lines
