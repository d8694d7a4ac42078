"""The one facade of the analysis: from job windows to verdicts.

The stages, in order: enough data to judge (:mod:`.checks.data`: pods, samples at the scrape interval
seen, GPU coverage); the model's reach (:mod:`.model.envelope`: features of several signals far
outside what it was trained on give Unknown); the classifier's calibrated probabilities, which decide;
physical vetoes (:mod:`.checks.vetoes`), which may only rule a class out where a documented capacity or
definition shows its stage neither saturates nor is waited on; then the explanations
(:mod:`.explain`): evidence, mechanism, advice and headroom from what was measured. The verdict is
Unknown when the top remaining probability is below ``abstain_threshold`` or every class is ruled
out; it then names the model's leaning as its secondary class, and scoring counts it as an
abstention. A runner-up within ``secondary_margin`` of the top class is named as secondary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from bottleneck_operator.analysis.checks.data import data_reason
from bottleneck_operator.analysis.checks.reads import Reads, read_window
from bottleneck_operator.analysis.checks.vetoes import Veto, apply_vetoes, gpus_never_wait, vetoes
from bottleneck_operator.analysis.explain.account import StepAccount, step_account
from bottleneck_operator.analysis.explain.advice import build_recommendations
from bottleneck_operator.analysis.explain.evidence import build_evidence, context_notes, framebuffer_p90
from bottleneck_operator.analysis.explain.headroom import capacity_needs, estimate_headroom
from bottleneck_operator.analysis.explain.mechanism import decide_mechanism
from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, extract_features, single_pod_windows
from bottleneck_operator.analysis.features.phases import segment_phases
from bottleneck_operator.analysis.features.summary import JobSummary, summarize
from bottleneck_operator.analysis.model.envelope import Envelope
from bottleneck_operator.contract.verdict import CLASSES, Abstention, Bottleneck, Mechanism, PodVerdict, Verdict
from bottleneck_operator.contract.window import FloatArray, JobWindow, PodWindow


class Classifier(Protocol):
    """What the analysis needs of a model (``analysis.model.BottleneckModel`` provides it)."""

    version: str
    classes: tuple[Bottleneck, ...]

    def predict_proba(self, x: FloatArray) -> FloatArray: ...


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
        problem = data_reason(w, min_coverage=min_coverage, min_window=min_window) or _unfamiliar(model, x[i])
        summary = summarize(w) if with_details or problem is None else None
        gpu_active = summary.gpu_active if summary else None
        if problem is not None:
            verdicts.append(_abstained(w, probs, problem, gpu_active, model.version))
            continue
        assert summary is not None
        reads, bare = _bare(w, probs, x[i], summary, model.version, abstain_threshold, secondary_margin)
        if not with_details:
            verdicts.append(bare)
            continue
        lo, hi = pod_slices[i]
        pods = _pod_verdicts(w, model, proba[lo:hi] if hi > lo else proba[i : i + 1], bare, summary)
        verdicts.append(
            _detailed(bare, x[i], summary, pods, step_account(reads, bare.mechanism), reads, framebuffer_p90(w))
        )
    return verdicts


def _abstained(
    w: JobWindow, probs: dict[str, float], problem: tuple[Abstention, str], gpu_active: float | None, version: str
) -> Verdict:
    """Unknown for a window that cannot be judged; its probabilities are kept for a reader's interest."""
    return Verdict(
        bottleneck=Bottleneck.UNKNOWN,
        confidence=0.0,
        probabilities=probs if w.pods else {c.value: 0.0 for c in CLASSES},
        reason=problem[1],
        gpu_active=gpu_active,
        model_version=version,
        abstention=problem[0],
    )


# DCGM's DRAM_ACTIVE is the one field that measures HBM bandwidth in use; MEM_COPY_UTIL is a time share.
HBM_UNREAD = (
    "DRAM_ACTIVE was not collected: HBM-bandwidth-bound and compute-bound kernels cannot be told apart; "
    "either way the gains are inside the kernels, where a profile shows which."
)


def _bare(
    w: JobWindow,
    probs: dict[str, float],
    x: FloatArray,
    summary: JobSummary,
    version: str,
    abstain_threshold: float,
    secondary_margin: float,
) -> tuple[Reads, Verdict]:
    """The window's readings and its verdict before the details: the model's probabilities, the
    vetoes' ruling-out, the phases' and vetoes' notes and the mechanism."""
    phases = segment_phases(w)
    reads = read_window(w, phases)
    ruled_out = vetoes(reads)
    notes = (*phases.notes(), *_veto_notes(probs, ruled_out))
    bare = _checked_verdict(
        apply_vetoes(probs, ruled_out), probs, summary.gpu_active, version, abstain_threshold, secondary_margin
    )
    never_waited = gpus_never_wait(reads) is not None
    mechanism = decide_mechanism(bare.bottleneck, x, summary, reads, gpus_never_waited=never_waited)
    # the ambiguity is the same whichever of the two the verdict names: say it on both
    if mechanism in (Mechanism.HBM_BANDWIDTH, Mechanism.COMPUTE) and reads.dram is None:
        notes = (*notes, HBM_UNREAD)
    return reads, replace(bare, notes=notes, mechanism=mechanism)


def _veto_notes(probs: Mapping[str, float], ruled_out: Mapping[Bottleneck, Veto]) -> list[str]:
    """The vetoes in words, the model's most probable class first."""
    ranked = sorted(ruled_out.values(), key=lambda v: -probs.get(v.cls.value, 0.0))
    return [
        f"{v.cls.value} ruled out ({100 * probs.get(v.cls.value, 0.0):.0f} % from the model): {v.reason}."
        for v in ranked
    ]


def _checked_verdict(
    checked: dict[str, float],
    probs: Mapping[str, float],
    gpu_active: float | None,
    version: str,
    abstain_threshold: float,
    secondary_margin: float,
) -> Verdict:
    """The bare verdict from the probabilities left after the vetoes; Unknown, leaning to the model's
    favourite, when every class is ruled out."""
    if not any(checked.values()):
        favourite = Bottleneck(max(probs, key=lambda k: probs[k]))
        return Verdict(
            Bottleneck.UNKNOWN,
            0.0,
            checked,
            favourite,
            f"the measurements rule out every class, the model's favourite {favourite.value} "
            f"({probs[favourite.value]:.2f}) among them: what limits this Job is not among what was collected",
            gpu_active,
            model_version=version,
            abstention=Abstention.LOW_CONFIDENCE,
        )
    cls, conf, secondary, why = _decide(checked, abstain_threshold=abstain_threshold, secondary_margin=secondary_margin)
    abstention = Abstention.LOW_CONFIDENCE if why is not None else None
    return Verdict(cls, conf, checked, secondary, why, gpu_active, model_version=version, abstention=abstention)


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
    account: StepAccount,
    reads: Reads,
    fb_p90: float | None = None,
) -> Verdict:
    """The bare classification with evidence, recommendations, headroom, capacity and per-pod verdicts."""
    cls, secondary = bare.bottleneck, bare.secondary
    # Evidence for Unknown speaks for the class it leans to, so a user sees what the model leaned to.
    basis = cls if cls is not Bottleneck.UNKNOWN else (secondary or Bottleneck.UNKNOWN)
    evidence = (
        build_evidence(basis, x, summary, account, reads, mechanism=bare.mechanism)
        if basis is not Bottleneck.UNKNOWN
        else ()
    )
    known = cls is not Bottleneck.UNKNOWN
    return Verdict(
        bottleneck=cls,
        confidence=bare.confidence,
        probabilities=bare.probabilities,
        secondary=secondary,
        reason=bare.reason,
        gpu_active=bare.gpu_active,
        evidence=evidence,
        recommendations=build_recommendations(cls, evidence, summary, x, reads) if known else (),
        headroom=estimate_headroom(cls, account, bare.mechanism) if known else None,
        capacity=capacity_needs(cls, summary, account, reads.dram) if known else (),
        pods=pods,
        model_version=bare.model_version,
        notes=(*bare.notes, account.describe(), *context_notes(x, fb_p90)),
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
