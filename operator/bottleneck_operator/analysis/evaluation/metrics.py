"""Evaluation figures: confusion matrix, per-class precision/recall/F1, macro-F1, abstention, ECE.

Abstentions (Unknown) count against recall — the job had a bottleneck and the verdict did not name
it — and are reported separately as the abstention rate. Expected calibration error is computed on
the verdicts that were not abstentions, over equal-width confidence bins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck

LABELS: tuple[str, ...] = tuple(c.value for c in CLASSES)
PREDICTED: tuple[str, ...] = (*LABELS, Bottleneck.UNKNOWN.value)


@dataclass(frozen=True)
class ClassFigures:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class Figures:
    """The figures for one set of verdicts.

    Attributes:
        n: number of jobs.
        confusion: true class -> predicted class (incl. Unknown) -> count.
        per_class: class -> precision/recall/F1/support.
        macro_f1: mean F1 over the classes present in the truth.
        accuracy: share of jobs whose verdict is their class.
        abstention: share of Unknown verdicts.
        ece: expected calibration error of the non-abstained verdicts (None without confidences).
    """

    n: int
    confusion: dict[str, dict[str, int]]
    per_class: dict[str, ClassFigures]
    macro_f1: float
    accuracy: float
    abstention: float
    ece: float | None = None
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "macro_f1": round(self.macro_f1, 4),
            "accuracy": round(self.accuracy, 4),
            "abstention": round(self.abstention, 4),
            "ece": None if self.ece is None else round(self.ece, 4),
            "per_class": {
                k: {
                    "precision": round(v.precision, 4),
                    "recall": round(v.recall, 4),
                    "f1": round(v.f1, 4),
                    "support": v.support,
                }
                for k, v in self.per_class.items()
            },
            "confusion": self.confusion,
        }


def expected_calibration_error(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """ECE: the support-weighted gap between mean confidence and accuracy over confidence bins.

    Args:
        confidence: the probability given to the predicted class.
        correct: whether each prediction was right.
        bins: number of equal-width bins over [0, 1].

    Returns:
        The ECE (0 is perfect), 0.0 for no predictions.
    """
    conf = np.asarray(confidence, dtype=np.float64)
    ok = np.asarray(correct, dtype=np.float64)
    if len(conf) == 0:
        return 0.0
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() * abs(conf[m].mean() - ok[m].mean())
    return float(total / len(conf))


def figures(truth: Sequence[str], predicted: Sequence[str], confidence: Sequence[float] | None = None) -> Figures:
    """All figures for one set of verdicts.

    Args:
        truth: the true class of each job (never Unknown).
        predicted: the verdict of each job (may be Unknown).
        confidence: the verdict's probability for its class, for ECE; None to skip ECE.

    Returns:
        The figures.
    """
    confusion = {t: dict.fromkeys(PREDICTED, 0) for t in LABELS}
    for t, p in zip(truth, predicted, strict=True):
        confusion[t][p] += 1
    per_class: dict[str, ClassFigures] = {}
    for c in LABELS:
        tp = confusion[c][c]
        support = sum(confusion[c].values())
        predicted_c = sum(confusion[t][c] for t in LABELS)
        precision = tp / predicted_c if predicted_c else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[c] = ClassFigures(precision, recall, f1, support)
    present = [c for c in LABELS if per_class[c].support]
    n = len(truth)
    correct = [t == p for t, p in zip(truth, predicted, strict=True)]
    ece = None
    if confidence is not None:
        kept = [
            (c, ok) for c, ok, p in zip(confidence, correct, predicted, strict=True) if p != Bottleneck.UNKNOWN.value
        ]
        ece = expected_calibration_error([c for c, _ in kept], [ok for _, ok in kept])
    return Figures(
        n=n,
        confusion=confusion,
        per_class=per_class,
        macro_f1=float(np.mean([per_class[c].f1 for c in present])) if present else 0.0,
        accuracy=sum(correct) / n if n else 0.0,
        abstention=sum(p == Bottleneck.UNKNOWN.value for p in predicted) / n if n else 0.0,
        ece=ece,
    )


def format_confusion(fig: Figures) -> str:
    """The confusion matrix as an aligned text table (rows: truth, columns: verdict)."""
    cols = [c for c in PREDICTED]
    width = max(len(c) for c in cols) + 1
    lines = ["truth \\ verdict".ljust(16) + "".join(c.rjust(width) for c in cols)]
    for t in LABELS:
        lines.append(t.ljust(16) + "".join(str(fig.confusion[t][c]).rjust(width) for c in cols))
    return "\n".join(lines)


def format_per_class(fig: Figures) -> str:
    """Per-class precision/recall/F1 as an aligned text table."""
    lines = [f"{'class':<14}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}"]
    for c, v in fig.per_class.items():
        lines.append(f"{c:<14}{v.precision:>10.3f}{v.recall:>10.3f}{v.f1:>10.3f}{v.support:>9d}")
    return "\n".join(lines)
