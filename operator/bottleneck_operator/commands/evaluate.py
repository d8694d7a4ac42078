"""`bottleneck-operator evaluate`: the model on held-out scenarios, through a real Prometheus.

Held-out jobs (hardware/workload combinations and seeds never used in training) are written as
OpenMetrics, backfilled into Debian's Prometheus with promtool, and analysed by the same path as
``analyze`` (``pipeline.Analyzer`` over window requests). The threshold-rule baseline runs on the
same fetched windows. Figures are printed overall and per dcgm field set, scrape interval, hard-case
tag and sidecar presence, followed by the model's misclassified jobs with their tags and key signals.

A local Prometheus holding one job's ~8-9 MB of OpenMetrics needs ~50 MB of memory, so the jobs are
evaluated in rounds: each round generates its jobs, backfills a fresh Prometheus, analyses them, stops
it and deletes its data; the figures aggregate every round. Memory stays bounded by the round size
while the figures rest on hundreds of jobs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_SEED = 90_210  # never a training seed: training uses its seed and seed + 1_000_003
DEFAULT_JOBS = 600  # ~4-5 minutes on the 2-core development machine (~0.4 s per job)
DEFAULT_ROUND = 60  # jobs per local Prometheus: ~9 MB of OpenMetrics each, keeps a round within ~3 GB
ROUND_SEED_STRIDE = 7_919  # round k draws seed + k x stride: far from training's seed and seed + 1_000_003
EVAL_START = 1767225600.0 + 3 * 86400  # fixed, after the test fixtures' data
BATCH = 25  # jobs per fetch: bounds the size of one query on a small machine
HARD_TAGS = ("noisy_neighbour", "cpu_throttled", "no_prof", "multi_node", "nccl_busy", "network_storage")
# The cases the collector exists for: a neighbour's load, throttling seen from inside, I/O the local disk never sees.
SIDECAR_TAGS = ("noisy_neighbour", "cpu_throttled", "network_storage")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "evaluate",
        help="evaluate the model on held-out simulated jobs through a real Prometheus",
        description=(
            "Generate held-out jobs, backfill their telemetry into a local Prometheus, analyse them as "
            "`analyze` does and print the figures next to the threshold-rule baseline."
        ),
    )
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"held-out jobs (default {DEFAULT_JOBS})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"held-out seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--round-size",
        type=int,
        default=DEFAULT_ROUND,
        help=f"jobs per local Prometheus; rounds bound the memory (default {DEFAULT_ROUND})",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this file")
    parser.add_argument("--model", type=Path, default=None, help="a model file (default: the shipped model)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where each round's TSDB and OpenMetrics go (deleted when the round ends)",
    )
    parser.set_defaults(func=main)


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
KEY_SIGNALS: tuple[tuple[str, str], ...] = (
    ("act", "act.mean"),
    ("low", "act_low_share"),
    ("cpuLim", "cpu_limit_frac.mean"),
    ("thr", "cpu_throttled_frac.mean"),
    ("nodeCPU", "node_cpu_busy_frac.mean"),
    ("iowait", "node_cpu_iowait_frac.mean"),
    ("psiIO", "node_psi_io_some.mean"),
    ("netShare", "net_rx_share.mean"),
    ("Dprocs", "sc_iowait_procs_share.mean"),
    ("pcie", "pcie_rx_frac.mean"),
    ("gap", "util_gap.mean"),
)


def _key_signals(window: Any) -> str:
    from bottleneck_operator.analysis.features import extract_features, value

    if window is None or not window.pods:
        return "no data"
    row = extract_features([window])[0]
    parts = []
    for label, name in KEY_SIGNALS:
        v = value(row, name)
        parts.append(f"{label}={'-' if v is None else f'{v:.2f}'}")
    return " ".join(parts)


def run_evaluation(
    n_jobs: int,
    seed: int,
    *,
    round_size: int = DEFAULT_ROUND,
    model_path: Path | None = None,
    workdir: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Generate, backfill, analyse and score held-out jobs, one local Prometheus per round.

    Args:
        n_jobs: held-out jobs to generate (ambiguous ones are left out).
        seed: their seed.
        round_size: jobs per round (per local Prometheus).
        model_path: the model file (default the shipped one).
        workdir: where each round's OpenMetrics and TSDB go (default a temporary directory); a
            round's data is deleted when it ends.
        log: progress callback.

    Returns:
        A JSON-ready dict: overall figures of the model and the baseline, the breakdowns and the
        model's misclassified jobs.
    """
    import shutil

    from bottleneck_operator.analysis.model import load_model
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings
    from bottleneck_operator.simulation import generate_jobs, write_openmetrics
    from bottleneck_operator.simulation.localprom import LocalPrometheus

    say = log or (lambda _m: None)
    model = load_model(model_path)
    t0 = time.perf_counter()
    jobs: list[Any] = []
    results: list[Any] = []
    without_sidecar: list[str | None] = []
    queries = 0
    rounds = round_seeds(n_jobs, seed, round_size)
    with tempfile.TemporaryDirectory(prefix="bottleneck-eval-") as tmp:
        root = workdir or Path(tmp)
        for k, (round_seed, count) in enumerate(rounds):
            batch = [j for j in generate_jobs(round_seed, count, start=EVAL_START, holdout=True) if not j.ambiguous]
            base = root / f"round-{k:03d}"
            base.mkdir(parents=True, exist_ok=True)
            om = base / "heldout.om"
            with om.open("w") as out:
                write_openmetrics(batch, out)
            size = om.stat().st_size / 1e6
            with LocalPrometheus.from_openmetrics(om, workdir=base / "prom") as prom:
                settings = Settings.model_validate({"prometheus_url": prom.url, "prometheus_timeout": 120.0})
                analyzer = Analyzer(settings, model=model)
                requests = [JobRequest(namespace=j.namespace, job=j.name, start=j.start, end=j.end) for j in batch]
                for b in range(0, len(requests), BATCH):
                    results.extend(analyzer.analyze_jobs(requests[b : b + BATCH], phase="Completed"))
                queries += analyzer.queries_issued
            without_sidecar.extend(_without_sidecar(results[len(without_sidecar) :], analyzer))
            shutil.rmtree(base, ignore_errors=True)
            jobs.extend(batch)
            say(
                f"round {k + 1}/{len(rounds)} (seed {round_seed}): {len(batch)} jobs, {size:.0f} MB of OpenMetrics, "
                f"{len(results)} analysed after {time.perf_counter() - t0:.0f} s"
            )
    report = score(jobs, results, model_version=model.version, seed=seed, queries=queries, rounds=len(rounds))
    report["sidecar_gain"] = sidecar_gain(jobs, results, without_sidecar)
    return report


def _without_sidecar(results: Sequence[Any], analyzer: Any) -> list[str | None]:
    """The verdicts of the same Prometheus windows with the collector's signals taken out.

    This is the same job seen from a cluster without the sidecar, so comparing the two isolates what
    the collector's per-pod signals add. None for windows that had no sidecar signals to take out.
    """
    import dataclasses

    from bottleneck_operator.contract.signals import Family, signals_of

    dropped = set(signals_of(Family.SIDECAR))
    stripped, where = [], []
    for i, r in enumerate(results):
        w = r.window
        if w is None or Family.SIDECAR not in w.quality.families:
            continue
        pods = tuple(
            dataclasses.replace(p, signals={k: v for k, v in p.signals.items() if k not in dropped}) for p in w.pods
        )
        quality = dataclasses.replace(w.quality, families=w.quality.families - {Family.SIDECAR})
        stripped.append(dataclasses.replace(w, pods=pods, quality=quality))
        where.append(i)
    verdicts = analyzer.classify(stripped, with_details=False)
    out: list[str | None] = [None] * len(results)
    for i, v in zip(where, verdicts, strict=True):
        out[i] = v.bottleneck.value
    return out


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
    from bottleneck_operator.analysis.baseline import rule_verdict
    from bottleneck_operator.analysis.metrics import figures

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

    groups: dict[str, dict[str, list[int]]] = {"dcgm_fieldset": {}, "scrape_interval": {}, "tag": {}, "sidecar": {}}
    for i, j in enumerate(jobs):
        groups["dcgm_fieldset"].setdefault(str(_param(j, "dcgm_fieldset")), []).append(i)
        groups["scrape_interval"].setdefault(f"{_param(j, 'scrape_interval')}", []).append(i)
        tags = _tags(j)
        for tag in HARD_TAGS:
            if tag in tags:
                groups["tag"].setdefault(tag, []).append(i)
        groups["sidecar"].setdefault("with" if _has_sidecar(j) else "without", []).append(i)
    hard = sorted({i for idx in groups["tag"].values() for i in idx})
    errors = [
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
    }


def format_report(report: dict[str, Any]) -> str:
    """The evaluation as printed text."""
    from bottleneck_operator.analysis.metrics import Figures, format_confusion, format_per_class

    def fig(d: dict[str, Any]) -> Figures:
        from bottleneck_operator.analysis.metrics import ClassFigures

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

    o = report["overall"]
    m, b = fig(o["model"]), fig(o["baseline"])
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
        "== side by side (macro-F1 / accuracy / abstention; baseline macro-F1 / accuracy)",
        f"{'group':<34}{'n':>5}{'model F1':>10}{'acc':>7}{'abst':>7}{'rules F1':>10}{'acc':>7}",
    ]

    def row(name: str, d: dict[str, Any]) -> str:
        mm, bb = d["model"], d["baseline"]
        return (
            f"{name:<34}{d['n']:>5}{mm['macro_f1']:>10.3f}{mm['accuracy']:>7.3f}{mm['abstention']:>7.3f}"
            f"{bb['macro_f1']:>10.3f}{bb['accuracy']:>7.3f}"
        )

    lines.append(row("all", o))
    lines.append(row("hard cases (any tag)", report["hard_cases"]))
    for key, groups in report["breakdowns"].items():
        for name, d in groups.items():
            lines.append(row(f"{key}={name}", d))
    gain = report.get("sidecar_gain") or {}
    if gain:
        lines += [
            "",
            "== what the collector sidecar adds (same windows, its signals taken out; accuracy)",
            f"{'group':<34}{'n':>5}{'with':>10}{'without':>10}{'gain':>8}",
        ]
        for name, d in gain.items():
            lines.append(
                f"{name:<34}{d['n']:>5}{d['with']:>10.3f}{d['without']:>10.3f}{d['with'] - d['without']:>+8.3f}"
            )
    errors = report.get("errors", [])
    lines += ["", f"== model: misclassified jobs ({len(errors)})"]
    for e in errors:
        why = f" ({e['reason']})" if e.get("reason") else ""
        lines.append(
            f"{e['job']}: {e['truth']} -> {e['verdict']} p={e['confidence']:.2f}{why} "
            f"[{e['fieldset']}, {e['scrape']} s; {','.join(e['tags']) or 'no tags'}]"
        )
        lines.append(f"    {e['signals']}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.errors import UsageError

    if args.jobs < 10:
        raise UsageError("--jobs must be at least 10")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.round_size < 10:
        raise UsageError("--round-size must be at least 10")
    report = run_evaluation(
        args.jobs, args.seed, round_size=args.round_size, model_path=args.model, workdir=args.workdir, log=say
    )
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0
