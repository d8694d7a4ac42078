"""Analysis benchmark: the held-out evaluation through a real Prometheus, and the throughput figure.

Prints the evaluation (confusion matrix, per-class figures, macro-F1, abstention, ECE, the rule
baseline side by side and the breakdowns), the framebuffer check (held-out Jobs with the framebuffer
forced to 0.98 must keep every verdict) and the number of job windows per second that feature
extraction plus prediction handle on one core.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.image_env import image_malloc_env

# Unset: the evaluation's default size (rounds of a fresh local Prometheus each, ~4-5 minutes in all).
EVAL_JOBS = os.environ.get("BENCH_ANALYSIS_JOBS")
THROUGHPUT_WINDOWS = 2000
FB_JOBS = 400


def throughput() -> None:
    """The throughput figures twice, each in a fresh process: under glibc's allocator settings as the
    container image sets them (the target is judged on these), and under glibc's defaults."""
    image = image_malloc_env()
    plain = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    runs = (
        ("as the image runs it, " + " ".join(f"{k}={v}" for k, v in image.items()), {**plain, **image}),
        ("glibc's defaults, for comparison", plain),
    )
    for label, env in runs:
        # the figure is wall-clock on a shared machine: the load beside it says what else ran
        load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
        print(f"throughput ({label}; load average {load} on {os.cpu_count()} cores):", flush=True)
        code = "from bench.bench_analysis import measure_throughput; measure_throughput()"
        subprocess.run([sys.executable, "-c", code], env=env, check=True)


def measure_throughput() -> None:
    """Windows/s of features + prediction (one core), and of full verdicts with evidence."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    from bottleneck_operator.analysis.classify import analyze_windows
    from bottleneck_operator.analysis.features.extract import FEATURE_SLICE, extract_features
    from bottleneck_operator.analysis.model.classifier import load_model
    from bottleneck_operator_dev.commands.train import simulated_windows

    target = 10_000  # features + prediction, windows/s on one core
    model = load_model()
    _, windows = simulated_windows(4242, 200, holdout=True)
    batch = (windows * (THROUGHPUT_WINDOWS // max(1, len(windows)) + 1))[:THROUGHPUT_WINDOWS]
    pods = sum(len(w.pods) for w in batch) / len(batch)
    with threadpool_limits(limits=1):
        rates = []
        for _ in range(5):
            t = time.perf_counter()
            for k in range(0, len(batch), FEATURE_SLICE):
                model.predict_proba(extract_features(batch[k : k + FEATURE_SLICE]))
            rates.append(len(batch) / (time.perf_counter() - t))
        features, prediction = _split(batch, model)
        t = time.perf_counter()
        analyze_windows(batch[:500], model)
        full = 500 / (time.perf_counter() - t)
    median = statistics.median(rates)
    print(
        f"  one core, {len(batch)} windows, {pods:.1f} pods/window, "
        f"{len(batch[0].timestamps)} samples: features+prediction median {median:,.0f} "
        f"windows/s (min {min(rates):,.0f}, max {max(rates):,.0f}; target >= {target:,}: "
        f"{'met' if median >= target else 'NOT met'}); full verdicts with evidence {full:,.0f} windows/s"
    )
    print(
        f"    where the time goes (median of 5, same batches): features alone {features:,.0f} windows/s, "
        f"prediction alone {prediction:,.0f} windows/s"
    )


def _split(batch: list[Any], model: Any) -> tuple[float, float]:
    """Windows/s of feature extraction alone and of prediction alone, over the same batches the features are
    extracted in (``FEATURE_SLICE``)."""
    from bottleneck_operator.analysis.features.extract import FEATURE_SLICE, extract_features

    features, prediction = [], []
    for _ in range(5):
        t = time.perf_counter()
        rows = [extract_features(batch[k : k + FEATURE_SLICE]) for k in range(0, len(batch), FEATURE_SLICE)]
        features.append(len(batch) / (time.perf_counter() - t))
        t = time.perf_counter()
        for x in rows:
            model.predict_proba(x)
        prediction.append(len(batch) / (time.perf_counter() - t))
    return statistics.median(features), statistics.median(prediction)


def mechanism_summary(mechanisms: dict[str, dict[str, float]]) -> None:
    """One line per mechanism: its accuracy where the class is right (the table above has the counts)."""
    for name, d in mechanisms.items():
        print(
            f"mechanism {name}: accuracy {d['accuracy']:.3f} over {d['n']} jobs of the right class (end to end {d['end_to_end']:.3f})"
        )


def framebuffer_check() -> None:
    """Verdict changes when every held-out Job's framebuffer reads 0.98 full (a full one is no stall)."""
    from dataclasses import replace

    import numpy as np

    from bottleneck_operator.analysis.classify import analyze_windows
    from bottleneck_operator.analysis.model.classifier import load_model
    from bottleneck_operator_dev.commands.train import simulated_windows

    model = load_model()
    _, windows = simulated_windows(5151, FB_JOBS, holdout=True)

    def forced(w: Any) -> Any:
        pods = [
            replace(
                p, signals={**p.signals, "fb_used_frac": np.where(np.isnan(p.signals["fb_used_frac"]), np.nan, 0.98)}
            )
            for p in w.pods
        ]
        return replace(w, pods=tuple(pods))

    before = analyze_windows(windows, model)
    after = analyze_windows([forced(w) for w in windows], model)
    changed = sum(
        (a.bottleneck, round(a.confidence, 6), [e.signal for e in a.evidence])
        != (b.bottleneck, round(b.confidence, 6), [e.signal for e in b.evidence])
        for a, b in zip(before, after, strict=True)
    )
    as_evidence = sum(e.signal == "fb_used_frac" for v in after for e in v.evidence)
    print(
        f"framebuffer forced to 0.98 on {len(windows)} held-out Jobs: {changed} verdicts changed "
        f"(class, confidence or evidence), framebuffer cited as evidence {as_evidence} times"
    )


def main() -> None:
    from bottleneck_operator.analysis.evaluation.report import format_report
    from bottleneck_operator.analysis.evaluation.scoring import STALL_BAR
    from bottleneck_operator_dev.commands.evaluate import DEFAULT_JOBS, DEFAULT_ROUND, DEFAULT_SEED, run_evaluation

    def say(msg: str) -> None:
        print(f"  {msg}", file=sys.stderr, flush=True)

    jobs = int(EVAL_JOBS) if EVAL_JOBS else DEFAULT_JOBS
    report = run_evaluation(jobs, DEFAULT_SEED, round_size=DEFAULT_ROUND, log=say)
    print(format_report(report))
    print()
    inv, m = report["invariants"], report["overall"]["model"]
    ece = "n/a" if m["ece"] is None else f"{m['ece']:.3f}"
    recalls = {k: v["recall"] for k, v in m["per_class"].items() if v["support"]}
    print(
        f"invariants over {inv['verdicts']} verdicts: stall class with headroom under x{STALL_BAR:.2f} "
        f"{inv['stall_headroom_below_bar']}, FB fill as evidence {inv['fb_as_evidence']}, evidence, headroom, "
        f"capacity or advice of another mechanism {inv['mechanism_contradicted']} (each must be 0)"
    )
    print(
        f"held-out: macro-F1 {m['macro_f1']:.3f}, lowest class recall {min(recalls.values()):.3f} "
        f"({min(recalls, key=lambda k: recalls[k])}), abstention {m['abstention']:.3f}, ECE {ece}"
    )
    print()
    mechanism_summary(report.get("mechanisms") or {})
    print()
    framebuffer_check()
    throughput()


if __name__ == "__main__":
    main()
