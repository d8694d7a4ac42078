"""From job windows to verdicts: features, calibrated prediction, checks, abstention, evidence, headroom.

Abstention comes first from the data (no pods, a window shorter than ``min_window``, GPU sample
coverage below ``min_coverage``), then from the model's reach: a window with features of several
signals far outside the training envelope (:mod:`.envelope`) is Unknown, "outside what the model knows". The model's probabilities are then checked against the window's
step-time account and evidence gates (:mod:`.classify_gates`): waits go to whom they belong (collective
waits to the slowed GPU or the links, a swapping pod's to Memory, a pinned loader's to CPU), a class
whose evidence does not hold is ruled out, and a stall that would gain less than x1.15 counts as
GPU-bound. The verdict is Unknown when the top checked probability is below
``abstain_threshold``; the ``reason`` says why. A runner-up within ``secondary_margin`` of the top class
is named as secondary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from bottleneck_operator.analysis.advice import build_recommendations
from bottleneck_operator.analysis.classify_gates import Checked, check_window, leaning, leans_to
from bottleneck_operator.analysis.envelope import Envelope
from bottleneck_operator.analysis.evidence import build_evidence, context_notes, framebuffer_p90
from bottleneck_operator.analysis.features import FEATURE_NAMES, extract_features, single_pod_windows
from bottleneck_operator.analysis.headroom import capacity_needs, estimate_headroom
from bottleneck_operator.analysis.mechanism import decide_mechanism
from bottleneck_operator.analysis.summary import JobSummary, summarize
from bottleneck_operator.contract.verdict import CLASSES, Abstention, Bottleneck, PodVerdict, Verdict
from bottleneck_operator.contract.window import FloatArray, JobWindow, PodWindow


class Classifier(Protocol):
    """What the analysis needs of a model (``analysis.model.BottleneckModel`` provides it)."""

    version: str
    classes: tuple[Bottleneck, ...]

    def predict_proba(self, x: FloatArray) -> FloatArray: ...


def _data_reason(window: JobWindow, *, min_coverage: float, min_window: float) -> tuple[Abstention, str] | None:
    if not window.pods:
        return Abstention.NO_PODS, "no pods of the job were found in the window"
    if window.duration < min_window:
        return Abstention.SHORT_WINDOW, f"window too short: {window.duration:.0f} s < min_window {min_window:.0f} s"
    if window.quality.coverage < min_coverage:
        return Abstention.LOW_COVERAGE, (
            f"too little GPU data: coverage {100 * window.quality.coverage:.0f} % < "
            f"min_coverage {100 * min_coverage:.0f} %"
        )
    return None


def _unfamiliar(model: Classifier, row: FloatArray) -> tuple[Abstention, str] | None:
    """Out of distribution: features of several signals far outside the model's training envelope."""
    # Models trained before envelopes were kept (and test doubles) carry none: nothing is unfamiliar.
    envelope: Envelope | None = getattr(model, "envelope", None)
    far = envelope.unfamiliar(row, FEATURE_NAMES) if envelope is not None else []
    if not far:
        return None
    return Abstention.OUT_OF_DISTRIBUTION, "outside what the model knows: " + "; ".join(far)


def _probabilities(model: Classifier, row: FloatArray) -> dict[str, float]:
    out = {c.value: 0.0 for c in CLASSES}
    for c, p in zip(model.classes, row, strict=True):
        out[c.value] = float(p)
    return out


def _decide(
    probs: dict[str, float], *, abstain_threshold: float, secondary_margin: float
) -> tuple[Bottleneck, float, Bottleneck | None, str | None]:
    ranked = sorted(probs.items(), key=lambda kv: -kv[1])
    (top, p1), (second, p2) = ranked[0], ranked[1]
    secondary = Bottleneck(second) if p1 - p2 <= secondary_margin and p2 > 0 else None
    if p1 < abstain_threshold:
        reason = f"model not confident: top class {top} at {p1:.2f} < abstain_threshold {abstain_threshold:.2f}"
        return Bottleneck.UNKNOWN, p1, Bottleneck(top), reason
    return Bottleneck(top), p1, secondary, None


def analyze_windows(
    windows: Sequence[JobWindow],
    model: Classifier,
    *,
    abstain_threshold: float = 0.5,
    min_coverage: float = 0.5,
    min_window: float = 120.0,
    secondary_margin: float = 0.25,
    with_details: bool = True,
) -> list[Verdict]:
    """Verdicts for many windows with one batched prediction.

    Args:
        windows: job windows.
        model: the classifier.
        abstain_threshold: below this top probability the verdict is Unknown.
        min_coverage: below this GPU sample coverage the verdict is Unknown.
        min_window: windows shorter than this (seconds) are Unknown.
        secondary_margin: a runner-up within this probability is named secondary.
        with_details: build evidence, recommendations, headroom, capacity and per-pod verdicts
            (False gives the bare classification, for bulk evaluation and throughput).

    Returns:
        One verdict per window, in order.
    """
    batch, pod_slices = _with_pod_windows(windows, with_details)
    x = extract_features(batch)
    proba = model.predict_proba(x) if len(batch) else np.empty((0, len(model.classes)))
    verdicts: list[Verdict] = []
    for i, w in enumerate(windows):
        probs = _probabilities(model, proba[i])
        problem = _data_reason(w, min_coverage=min_coverage, min_window=min_window) or _unfamiliar(model, x[i])
        summary = summarize(w) if with_details or problem is None else None
        gpu_active = summary.gpu_active if summary else None
        if problem is not None:
            verdicts.append(
                Verdict(
                    bottleneck=Bottleneck.UNKNOWN,
                    confidence=0.0,
                    probabilities=probs if w.pods else {c.value: 0.0 for c in CLASSES},
                    reason=problem[1],
                    gpu_active=gpu_active,
                    model_version=model.version,
                    abstention=problem[0],
                )
            )
            continue
        checked = check_window(w, x[i], probs)
        bare = _checked_verdict(checked, probs, gpu_active, model.version, abstain_threshold, secondary_margin)
        bare = replace(bare, mechanism=decide_mechanism(bare.bottleneck, x[i]))
        if not with_details:
            verdicts.append(bare)
            continue
        assert summary is not None
        lo, hi = pod_slices[i]
        pods = _pod_verdicts(w, model, proba[lo:hi] if hi > lo else proba[i : i + 1], bare, summary)
        verdicts.append(_detailed(bare, x[i], summary, pods, checked, framebuffer_p90(w)))
    return verdicts


def _checked_verdict(
    checked: Checked,
    probs: dict[str, float],
    gpu_active: float | None,
    version: str,
    abstain_threshold: float,
    secondary_margin: float,
) -> Verdict:
    """The bare verdict from the checked probabilities; Unknown, pointing somewhere, when none is left."""
    if not any(checked.probabilities.values()):
        return Verdict(
            Bottleneck.UNKNOWN,
            0.0,
            checked.probabilities,
            leans_to(checked, probs),
            leaning(checked, probs),
            gpu_active,
            model_version=version,
            notes=checked.notes,
            abstention=Abstention.LOW_CONFIDENCE,
        )
    cls, conf, secondary, why = _decide(
        checked.probabilities, abstain_threshold=abstain_threshold, secondary_margin=secondary_margin
    )
    abstention = Abstention.LOW_CONFIDENCE if why is not None else None
    return Verdict(
        cls, conf, checked.probabilities, secondary, why, gpu_active, model_version=version, notes=checked.notes,
        abstention=abstention,
    )  # fmt: skip


def _with_pod_windows(
    windows: Sequence[JobWindow], with_details: bool
) -> tuple[list[JobWindow], list[tuple[int, int]]]:
    """The windows, then (with details) each multi-pod window's single-pod windows; their slices per window."""
    batch: list[JobWindow] = list(windows)
    pod_slices: list[tuple[int, int]] = []
    if with_details:
        for w in windows:
            extra = single_pod_windows(w) if len(w.pods) > 1 else []
            pod_slices.append((len(batch), len(batch) + len(extra)))
            batch.extend(extra)
    return batch, pod_slices


def _detailed(
    bare: Verdict,
    x: FloatArray,
    summary: JobSummary,
    pods: tuple[PodVerdict, ...],
    checked: Checked,
    fb_p90: float | None = None,
) -> Verdict:
    """The bare classification with evidence, recommendations, headroom, capacity and per-pod verdicts."""
    cls, secondary = bare.bottleneck, bare.secondary
    # Evidence for Unknown speaks for the most likely class, so a user sees what the model leaned to.
    basis = cls if cls is not Bottleneck.UNKNOWN else (secondary or Bottleneck.UNKNOWN)
    evidence = (
        build_evidence(basis, x, summary, checked, mechanism=bare.mechanism) if basis is not Bottleneck.UNKNOWN else ()
    )
    known = cls is not Bottleneck.UNKNOWN
    busy = checked.account.busy if checked.account is not None else None
    return Verdict(
        bottleneck=cls,
        confidence=bare.confidence,
        probabilities=bare.probabilities,
        secondary=secondary if known else None,
        reason=bare.reason,
        gpu_active=bare.gpu_active,
        evidence=evidence,
        recommendations=build_recommendations(cls, evidence, summary, x, busy) if known else (),
        headroom=estimate_headroom(cls, x, checked) if known else None,
        capacity=capacity_needs(cls, x, summary, checked) if known else (),
        pods=pods,
        model_version=bare.model_version,
        notes=(*bare.notes, *context_notes(x, fb_p90)),
        abstention=bare.abstention,
        mechanism=bare.mechanism,
    )


def _pod_verdicts(
    window: JobWindow, model: Classifier, proba: FloatArray, bare: Verdict, summary: JobSummary
) -> tuple[PodVerdict, ...]:
    if len(window.pods) == 1:
        p = window.pods[0]
        return (PodVerdict(p.pod, p.node, bare.bottleneck, bare.confidence, summary.gpu_active),)
    out = []
    for pod, row in zip(window.pods, proba, strict=True):
        k = int(np.argmax(row))
        out.append(PodVerdict(pod.pod, pod.node, model.classes[k], float(row[k]), summarize_pod_activity(pod)))
    return tuple(out)


def summarize_pod_activity(pod: PodWindow) -> float | None:
    """Mean of the pod's best GPU activity signal."""
    signals = pod.signals
    for name in ("sm_active", "gr_engine_active", "gpu_util"):
        v = signals.get(name)
        if v is not None and np.any(~np.isnan(v)):
            return float(np.nanmean(v))
    return None


def analyze_window(
    window: JobWindow,
    model: Classifier,
    *,
    abstain_threshold: float = 0.5,
    min_coverage: float = 0.5,
    min_window: float = 120.0,
    secondary_margin: float = 0.25,
) -> Verdict:
    """The verdict for one window (see :func:`analyze_windows`).

    Args:
        window: the job window.
        model: the classifier.
        abstain_threshold: below this top probability the verdict is Unknown.
        min_coverage: below this GPU sample coverage the verdict is Unknown.
        min_window: windows shorter than this (seconds) are Unknown.
        secondary_margin: a runner-up within this probability is named secondary.

    Returns:
        The verdict.
    """
    return analyze_windows(
        [window],
        model,
        abstain_threshold=abstain_threshold,
        min_coverage=min_coverage,
        min_window=min_window,
        secondary_margin=secondary_margin,
    )[0]
