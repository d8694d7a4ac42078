"""Scoring an evaluation: figures of the model and the rule baseline, breakdowns by condition, invariants.

Pure: it reads simulated jobs (``label``, ``name``, ``params``) and the pipeline's results (``verdict``,
``window``) by attribute, so it needs neither the simulator nor Prometheus; ``commands/evaluate.py``
generates, backfills and analyses the jobs; :mod:`.evaluation_report` prints the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from bottleneck_operator.analysis.evaluation.baseline import rule_verdict
from bottleneck_operator.analysis.evaluation.metrics import figures
from bottleneck_operator.analysis.explain.agreement import disagreements
from bottleneck_operator.analysis.features.extract import extract_features, value
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.analysis.features.series_names import Extra, FeatureKey, Series
from bottleneck_operator.contract.signals import Family, signals_of
from bottleneck_operator.contract.verdict import Abstention
from bottleneck_operator.contract.window import JobWindow

ROUND_SEED_STRIDE = 7_919  # round k draws seed + k x stride: far from training's seed and seed + 1_000_003
HARD_TAGS = ("noisy_neighbour", "cpu_throttled", "no_prof", "multi_node", "nccl_busy", "network_storage")
# The cases the collector exists for: a neighbour's load, throttling seen from inside, I/O the local disk never sees.
SIDECAR_TAGS = ("noisy_neighbour", "cpu_throttled", "network_storage")


def _tags(job: Any) -> set[str]:
    return {str(t) for t in (getattr(job.params, "tags", ()) or ())}


def _param(job: Any, name: str) -> Any:
    params = job.params
    if isinstance(params, dict):
        return params.get(name)
    value = getattr(params, name, None)
    if value is None:
        value = getattr(getattr(params, "env", None), name, None)
    return value


def _has_sidecar(job: Any) -> bool:
    sc = _param(job, "sidecar")
    return "sidecar" in _tags(job) if sc is None else bool(sc)


def round_seeds(n_jobs: int, seed: int, round_size: int) -> list[tuple[int, int]]:
    """(seed, jobs) of each round: round k draws ``seed + k * ROUND_SEED_STRIDE``.

    Args:
        n_jobs: held-out jobs in all.
        seed: the evaluation seed (round 0 uses it as is).
        round_size: jobs per round.

    Returns:
        One (seed, jobs) pair per round.
    """
    size = max(1, round_size)
    return [(seed + k * ROUND_SEED_STRIDE, min(size, n_jobs - start)) for k, start in enumerate(range(0, n_jobs, size))]


# Signals printed next to each misclassified job: enough to tell which stage really bound it.
KEY_SIGNALS: tuple[tuple[str, FeatureKey], ...] = (
    ("act", Series.ACT.mean),
    ("low", Extra.ACT_LOW_SHARE.key),
    ("cpuLim", Series.CPU_LIMIT_FRAC.mean),
    ("thr", Series.CPU_THROTTLED_FRAC.mean),
    ("nodeCPU", Series.NODE_CPU_BUSY_FRAC.mean),
    ("iowait", Series.NODE_CPU_IOWAIT_FRAC.mean),
    ("psiIO", Series.NODE_PSI_IO_SOME.mean),
    ("netShare", Series.NET_RX_SHARE.mean),
    ("Dprocs", Series.SC_IOWAIT_PROCS_SHARE.mean),
    ("pcie", Series.PCIE_RX_FRAC.mean),
    ("gap", Series.UTIL_GAP.mean),
)


def _key_signals(window: Any) -> str:
    if window is None or not window.pods:
        return "no data"
    row = extract_features([window])[0]
    parts = []
    for label, name in KEY_SIGNALS:
        v = value(row, name)
        parts.append(f"{label}={'-' if v is None else f'{v:.2f}'}")
    return " ".join(parts)


def sidecar_gain(jobs: Sequence[Any], results: Sequence[Any], without: Sequence[str | None]) -> dict[str, Any]:
    """Accuracy on the jobs whose windows had sidecar signals, with and without those signals, by hard case.

    Args:
        jobs: the simulated jobs, in the order of ``results``.
        results: the pipeline's results (with the sidecar signals the cluster had).
        without: the verdict of each window with the sidecar signals taken out (None: it had none).

    Returns:
        group -> {"n", "with", "without"} accuracies (abstentions count as misses).
    """
    groups: dict[str, list[int]] = {"all with sidecar": []}
    for i, j in enumerate(jobs):
        if without[i] is None:
            continue
        groups["all with sidecar"].append(i)
        for tag in SIDECAR_TAGS:
            if tag in _tags(j):
                groups.setdefault(f"tag={tag}", []).append(i)

    def acc(idx: Sequence[int], pred: Callable[[int], str | None]) -> float:
        return sum(pred(i) == jobs[i].label.value for i in idx) / len(idx) if idx else 0.0

    return {
        name: {
            "n": len(idx),
            "with": round(acc(idx, lambda i: results[i].verdict.bottleneck.value), 4),
            "without": round(acc(idx, lambda i: without[i]), 4),
        }
        for name, idx in groups.items()
    }


def score(
    jobs: Sequence[Any], results: Sequence[Any], *, model_version: str, seed: int, queries: int, rounds: int
) -> dict[str, Any]:
    """The figures of analysed jobs (see :func:`run_evaluation`).

    Args:
        jobs: the simulated jobs, in the order of ``results``.
        results: the pipeline's results.
        model_version: the model's version.
        seed: the evaluation seed.
        queries: Prometheus queries issued.
        rounds: evaluation rounds.

    Returns:
        The JSON-ready report.
    """
    truth = [j.label.value for j in jobs]
    pred = [r.verdict.bottleneck.value for r in results]
    conf = [r.verdict.confidence for r in results]
    base_pred = [rule_verdict(r.window).value if r.window is not None else "Unknown" for r in results]

    def both(idx: Sequence[int]) -> dict[str, Any]:
        t = [truth[i] for i in idx]
        return {
            "n": len(idx),
            "model": figures(t, [pred[i] for i in idx], [conf[i] for i in idx]).as_dict(),
            "baseline": figures(t, [base_pred[i] for i in idx]).as_dict(),
        }

    groups = _breakdown_groups(jobs)
    hard = sorted({i for idx in groups["tag"].values() for i in idx})
    errors = _errors(jobs, results, truth, pred, conf)
    return {
        "model_version": model_version,
        "seed": seed,
        "rounds": rounds,
        "jobs": len(jobs),
        "queries": queries,
        "overall": both(range(len(jobs))),
        "hard_cases": both(hard),
        "breakdowns": {k: {name: both(idx) for name, idx in sorted(v.items())} for k, v in groups.items()},
        "errors": errors,
        "mechanisms": mechanism_accuracy(jobs, results),
        "invariants": invariants(results),
        "abstentions": abstentions(results),
    }


def abstentions(results: Sequence[Any]) -> dict[str, int]:
    """Unknown verdicts by why (the ``Abstention`` value), every kind listed, most frequent first."""
    counts = dict.fromkeys((a.value for a in Abstention), 0)
    for r in results:
        if r.verdict.abstention is not None:
            counts[r.verdict.abstention.value] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def mechanism_accuracy(jobs: Sequence[Any], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Each true mechanism's accuracy, over the jobs whose class the model got right.

    A mechanism is only named for the verdict's class, so a job of the wrong class says nothing about
    the mechanism rules; ``end_to_end`` counts class and mechanism right over all jobs of the mechanism.

    Args:
        jobs: the simulated jobs (their ``mechanism`` is the truth; jobs without one are left out).
        results: the pipeline's results, in the same order.

    Returns:
        mechanism -> {"jobs", "n" (class right), "accuracy", "end_to_end"}, plus "all".
    """
    tally: dict[str, list[int]] = {}
    for j, r in zip(jobs, results, strict=True):
        truth = getattr(j, "mechanism", None)
        if truth is None:
            continue
        right_class = r.verdict.bottleneck.value == j.label.value
        right = right_class and r.verdict.mechanism == truth
        for key in (str(truth), "all"):
            t = tally.setdefault(key, [0, 0, 0])
            t[0] += 1
            t[1] += right_class
            t[2] += right
    return {
        k: {
            "jobs": t[0],
            "n": t[1],
            "accuracy": round(t[2] / t[1], 4) if t[1] else 0.0,
            "end_to_end": round(t[2] / t[0], 4),
        }
        for k, t in sorted(tally.items(), key=lambda kv: (kv[0] == "all", kv[0]))
    }


_STALL_CLASSES = frozenset({"IO", "CPU", "Interconnect", "Memory"})
_FB_SIGNALS = frozenset({"fb_used_frac", "fb_used_bytes", "fb_free_bytes"})


# the least speed-up a stall verdict may promise: a wait under XProf's 5 % bar is not a stall
STALL_BAR = 1.0 / (1.0 - WAITED_ON)


def invariants(results: Sequence[Any]) -> dict[str, int]:
    """Verdicts whose own headroom or evidence contradicts their class, counted over every evaluated job.

    Args:
        results: the pipeline's results (their verdicts, with details).

    Returns:
        "verdicts" (non-Unknown ones checked), "stall_headroom_below_bar" (a stall class, HBM-bound
        kernels aside, whose headroom promises under x1.05: no wait worth the name),
        "fb_as_evidence" (framebuffer fill among the evidence) and "mechanism_contradicted" (evidence,
        headroom, capacity or advice that speak for another mechanism of the class, ``explain.agreement``).
        Each must be 0.
    """
    counts = {"verdicts": 0, "stall_headroom_below_bar": 0, "fb_as_evidence": 0, "mechanism_contradicted": 0}
    for r in results:
        v = r.verdict
        if v.bottleneck.value == "Unknown":
            continue
        counts["verdicts"] += 1
        hbm = v.mechanism is not None and v.mechanism.value == "hbm-bandwidth"
        stall = v.bottleneck.value in _STALL_CLASSES and not hbm
        if stall and v.headroom is not None and v.headroom.high < STALL_BAR - 1e-9:
            counts["stall_headroom_below_bar"] += 1
        if any(e.signal in _FB_SIGNALS for e in v.evidence):
            counts["fb_as_evidence"] += 1
        if disagreements(v):
            counts["mechanism_contradicted"] += 1
    return counts


def _breakdown_groups(jobs: Sequence[Any]) -> dict[str, dict[str, list[int]]]:
    """Job indices by dcgm field set, scrape interval, hard-case tag and sidecar presence."""
    groups: dict[str, dict[str, list[int]]] = {"dcgm_fieldset": {}, "scrape_interval": {}, "tag": {}, "sidecar": {}}
    for i, j in enumerate(jobs):
        groups["dcgm_fieldset"].setdefault(str(_param(j, "dcgm_fieldset")), []).append(i)
        groups["scrape_interval"].setdefault(f"{_param(j, 'scrape_interval')}", []).append(i)
        tags = _tags(j)
        for tag in HARD_TAGS:
            if tag in tags:
                groups["tag"].setdefault(tag, []).append(i)
        groups["sidecar"].setdefault("with" if _has_sidecar(j) else "without", []).append(i)
    return groups


def _errors(
    jobs: Sequence[Any], results: Sequence[Any], truth: list[str], pred: list[str], conf: list[float]
) -> list[dict[str, Any]]:
    """The model's misclassified jobs, with the signals that tell which stage really bound them."""
    return [
        {
            "job": j.name,
            "truth": truth[i],
            "verdict": pred[i],
            "confidence": round(conf[i], 3),
            "reason": results[i].verdict.reason if pred[i] == "Unknown" else "",
            "tags": sorted(_tags(j)),
            "fieldset": str(_param(j, "dcgm_fieldset")),
            "scrape": _param(j, "scrape_interval"),
            "signals": _key_signals(results[i].window),
        }
        for i, j in enumerate(jobs)
        if pred[i] != truth[i]
    ]


def strip_sidecar(window: JobWindow | None) -> JobWindow | None:
    """The window with the collector's signals taken out, as a cluster without the sidecar sees it.

    None when the window had no sidecar signals to take out.
    """
    if window is None or Family.SIDECAR not in window.quality.families:
        return None
    dropped = set(signals_of(Family.SIDECAR))
    pods = tuple(
        dataclasses.replace(p, signals={k: v for k, v in p.signals.items() if k not in dropped}) for p in window.pods
    )
    quality = dataclasses.replace(window.quality, families=window.quality.families - {Family.SIDECAR})
    return dataclasses.replace(window, pods=pods, quality=quality)
