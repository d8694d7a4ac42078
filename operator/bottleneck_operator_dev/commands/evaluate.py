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
DEFAULT_JOBS = 600
DEFAULT_ROUND = 60  # jobs per local Prometheus: bounds the disk and memory one round takes
EVAL_START = 1767225600.0 + 3 * 86400  # fixed, after the test fixtures' data
BATCH = 25  # jobs per fetch: bounds the size of one query on a small machine


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
    from bottleneck_operator.analysis.evaluation.scoring import round_seeds, score, sidecar_gain
    from bottleneck_operator.analysis.model.classifier import load_model
    from bottleneck_operator_dev.simulation import generate_jobs

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
            size, issued = _run_round(batch, base, model, results, without_sidecar)
            queries += issued
            jobs.extend(batch)
            say(
                f"round {k + 1}/{len(rounds)} (seed {round_seed}): {len(batch)} jobs, {size:.0f} MB of OpenMetrics, "
                f"{len(results)} analysed after {time.perf_counter() - t0:.0f} s"
            )
    report = score(jobs, results, model_version=model.version, seed=seed, queries=queries, rounds=len(rounds))
    report["sidecar_gain"] = sidecar_gain(jobs, results, without_sidecar)
    return report


def _run_round(
    batch: list[Any], base: Path, model: Any, results: list[Any], without_sidecar: list[str | None]
) -> tuple[float, int]:
    """Backfill one round's jobs into a local Prometheus of its own and analyse them.

    The results are appended to ``results``, the verdicts without the collector's signals to
    ``without_sidecar``.

    Returns:
        (megabytes of OpenMetrics, Prometheus queries issued); the round's data is deleted at the end.
    """
    import shutil

    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings
    from bottleneck_operator_dev.simulation import write_openmetrics
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus

    base.mkdir(parents=True, exist_ok=True)
    om = base / "heldout.om"
    with om.open("w") as out:
        write_openmetrics(batch, out)
    size = om.stat().st_size / 1e6
    with LocalPrometheus.from_openmetrics(om, workdir=base / "prom") as prom:
        settings = Settings.model_validate({"prometheus_url": prom.url, "prometheus_timeout": 120.0})
        analyzer = Analyzer.from_settings(settings, model=model)
        requests = [JobRequest(namespace=j.namespace, job=j.name, start=j.start, end=j.end) for j in batch]
        for b in range(0, len(requests), BATCH):
            results.extend(analyzer.analyze_jobs(requests[b : b + BATCH], phase="Completed"))
    without_sidecar.extend(_without_sidecar(results[len(without_sidecar) :], analyzer))
    shutil.rmtree(base, ignore_errors=True)
    return size, analyzer.queries_issued


def _without_sidecar(results: Sequence[Any], analyzer: Any) -> list[str | None]:
    """The verdicts of the same Prometheus windows with the collector's signals taken out.

    This is the same job seen from a cluster without the sidecar, so comparing the two isolates what
    the collector's per-pod signals add. None for windows that had no sidecar signals to take out.
    """
    from bottleneck_operator.analysis.evaluation.scoring import strip_sidecar

    stripped, where = [], []
    for i, r in enumerate(results):
        w = strip_sidecar(r.window)
        if w is not None:
            stripped.append(w)
            where.append(i)
    verdicts = analyzer.classify(stripped, with_details=False)
    out: list[str | None] = [None] * len(results)
    for i, v in zip(where, verdicts, strict=True):
        out[i] = v.bottleneck.value
    return out


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.analysis.evaluation.report import format_report
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
