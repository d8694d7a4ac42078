"""`bottleneck-operator evaluate`: the model on held-out scenarios, through a real Prometheus.

Held-out jobs (hardware/workload combinations and seeds never used in training) are written as
OpenMetrics, backfilled into Debian's Prometheus with promtool, and analysed by the same path as
``analyze`` (``pipeline.Analyzer`` over window requests). The threshold-rule baseline runs on the
same fetched windows. Figures are printed overall and per dcgm field set, scrape interval, hard-case
tag and sidecar presence.
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
DEFAULT_JOBS = 100  # ~9 MB of OpenMetrics per job: keeps the local Prometheus within a few GB
EVAL_START = 1767225600.0 + 3 * 86400  # fixed, after the test fixtures' data
BATCH = 25  # jobs per fetch: bounds the size of one query on a small machine
HARD_TAGS = ("noisy_neighbour", "cpu_throttled", "no_prof", "multi_node", "nccl_busy", "network_storage")


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
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this file")
    parser.add_argument("--model", type=Path, default=None, help="a model file (default: the shipped model)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the TSDB and OpenMetrics here")
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


def run_evaluation(
    n_jobs: int,
    seed: int,
    *,
    model_path: Path | None = None,
    workdir: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Generate, backfill, analyse and score held-out jobs.

    Args:
        n_jobs: held-out jobs to generate.
        seed: their seed.
        model_path: the model file (default the shipped one).
        workdir: where the OpenMetrics and TSDB go (default a temporary directory).
        log: progress callback.

    Returns:
        A JSON-ready dict: overall figures of the model and the baseline, and the breakdowns.
    """
    from bottleneck_operator.analysis.baseline import rule_verdict
    from bottleneck_operator.analysis.metrics import figures
    from bottleneck_operator.analysis.model import load_model
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings
    from bottleneck_operator.simulation import generate_jobs, write_openmetrics
    from bottleneck_operator.simulation.localprom import LocalPrometheus

    say = log or (lambda _m: None)
    model = load_model(model_path)
    t0 = time.perf_counter()
    jobs = [j for j in generate_jobs(seed, n_jobs, start=EVAL_START, holdout=True) if not j.ambiguous]
    say(f"generated {len(jobs)} unambiguous held-out jobs in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory(prefix="bottleneck-eval-") as tmp:
        base = workdir or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        om = base / "heldout.om"
        with om.open("w") as out:
            write_openmetrics(jobs, out)
        say(f"wrote {om.stat().st_size / 1e6:.1f} MB of OpenMetrics in {time.perf_counter() - t0:.1f} s")
        with LocalPrometheus.from_openmetrics(om, workdir=base / "prom") as prom:
            say(f"Prometheus ready at {prom.url} after {time.perf_counter() - t0:.1f} s")
            settings = Settings.model_validate({"prometheus_url": prom.url, "prometheus_timeout": 120.0})
            analyzer = Analyzer(settings, model=model)
            requests = [JobRequest(namespace=j.namespace, job=j.name, start=j.start, end=j.end) for j in jobs]
            results = []
            for k in range(0, len(requests), BATCH):
                results.extend(analyzer.analyze_jobs(requests[k : k + BATCH], phase="Completed"))
            queries = analyzer.queries_issued
        say(f"analysed {len(results)} jobs with {queries} queries in {time.perf_counter() - t0:.1f} s")
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
    return {
        "model_version": model.version,
        "seed": seed,
        "jobs": len(jobs),
        "queries": queries,
        "overall": both(range(len(jobs))),
        "hard_cases": both(hard),
        "breakdowns": {k: {name: both(idx) for name, idx in sorted(v.items())} for k, v in groups.items()},
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
        f"model {report['model_version']} on {report['jobs']} held-out jobs (seed {report['seed']}), "
        f"{report['queries']} Prometheus queries",
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
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.errors import UsageError

    if args.jobs < 10:
        raise UsageError("--jobs must be at least 10")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    report = run_evaluation(args.jobs, args.seed, model_path=args.model, workdir=args.workdir, log=say)
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0
