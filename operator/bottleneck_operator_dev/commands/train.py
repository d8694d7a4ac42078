"""`bottleneck-operator train`: retrain the shipped model from a seed, with its model card.

The training data are four worlds: jobs of the simulator (``simulation.generate_jobs``, never the
holdout combinations), of the independently written second family (``scenarios.generate_family``,
``--scenario-jobs``, 2,000 by default), of the third family (``blindfamily``, ``--third-family-jobs``,
2,000 by default: written blind for evaluation, it was read twice and is a training world since the
second blind family showed what a third world is worth, docs/analysis.md) and of the fourth
(``familyd``, ``--fourth-family-jobs``, 2,000 by default: written blind too, read once, and spent as a
blind family by the decision that reading informed), turned into windows directly, plus degraded copies that drop exporter families and draw what differs between clusters
(``model/training.py``). The temperature is fitted across the worlds: each world scored by a
classifier fitted on the others alone, so that the confidence says how sure the model may be on a
cluster nobody simulated. Fresh draws of every world give the card's figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

DEFAULT_SEED = 7
DEFAULT_JOBS = 4000
DEFAULT_SCENARIO_JOBS = 2000  # jobs of the second scenario family beside the simulator's: trained across worlds
DEFAULT_THIRD_JOBS = 2000  # jobs of the third family (blindfamily), a third world
DEFAULT_FOURTH_JOBS = 2000  # jobs of the fourth family (familyd), a fourth world
DEFAULT_COPIES = 3
# Prediction cost grows with the number of trees (iterations x classes): 100 iterations at a learning
# rate of 0.15 keep features + prediction above 5,000 job windows/s on one core.
DEFAULT_ITER = 100
TRAIN_START = 1767225600.0  # fixed, so a seed reproduces the same windows


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "train",
        help="retrain the classifier from simulated jobs",
        description="Retrain the bottleneck classifier from a seed and write the model file, its metadata and card.",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"training seed (default {DEFAULT_SEED})")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"simulated jobs (default {DEFAULT_JOBS})")
    parser.add_argument(
        "--scenario-jobs",
        type=int,
        default=DEFAULT_SCENARIO_JOBS,
        help=f"jobs of the second scenario family beside them (default {DEFAULT_SCENARIO_JOBS}; 0: the simulator's alone)",
    )
    parser.add_argument(
        "--third-family-jobs",
        type=int,
        default=DEFAULT_THIRD_JOBS,
        help=f"jobs of the third family (blindfamily) beside them (default {DEFAULT_THIRD_JOBS}; 0: none)",
    )
    parser.add_argument(
        "--fourth-family-jobs",
        type=int,
        default=DEFAULT_FOURTH_JOBS,
        help=f"jobs of the fourth family (familyd) beside them (default {DEFAULT_FOURTH_JOBS}; 0: none)",
    )
    parser.add_argument(
        "--copies", type=int, default=DEFAULT_COPIES, help="degraded copies per job with families dropped"
    )
    parser.add_argument(
        "--max-iter", type=int, default=DEFAULT_ITER, help=f"boosting iterations (default {DEFAULT_ITER})"
    )
    parser.add_argument("--output", type=Path, default=None, help="directory (default: the shipped model's)")
    parser.set_defaults(func=main)


def simulated_windows(seed: int, n: int, *, holdout: bool = False) -> tuple[list[Any], list[Any]]:
    """Simulated unambiguous jobs and their windows (step 30 s, the analyzer's default resolution).

    Args:
        seed: the simulator seed.
        n: number of jobs.
        holdout: draw the held-out hardware/workload combinations.

    Returns:
        (jobs, windows).
    """
    from bottleneck_operator_dev.simulation import generate_jobs

    jobs = [j for j in generate_jobs(seed, n, start=TRAIN_START, holdout=holdout) if not j.ambiguous]
    return jobs, [j.to_window(step=30.0) for j in jobs]


def family_windows(generate: Any, seed: int, n: int) -> tuple[list[Any], list[Any]]:
    """Jobs a scenario family's ``generate(seed, n, start=...)`` draws over the training window: (labels, windows)."""
    jobs = generate(seed, n, start=TRAIN_START)
    return [j.label for j in jobs], [j.window for j in jobs]


def scenario_windows(seed: int, n: int) -> tuple[list[Any], list[Any]]:
    """Jobs of the second scenario family and their windows (step 30 s): (labels, windows)."""
    from bottleneck_operator_dev.scenarios import generate_family

    return family_windows(generate_family, seed, n)


def third_family_windows(seed: int, n: int) -> tuple[list[Any], list[Any]]:
    """Jobs of the third family (``blindfamily``) and their windows (step 30 s): (labels, windows)."""
    from bottleneck_operator_dev.blindfamily import generate_blind_family

    return family_windows(generate_blind_family, seed, n)


def fourth_family_windows(seed: int, n: int) -> tuple[list[Any], list[Any]]:
    """Jobs of the fourth family (``familyd``) and their windows (step 30 s): (labels, windows)."""
    from bottleneck_operator_dev.familyd import generate_family_d

    return family_windows(generate_family_d, seed, n)


def train(
    seed: int,
    n_jobs: int,
    *,
    scenario_jobs: int = DEFAULT_SCENARIO_JOBS,
    third_jobs: int = DEFAULT_THIRD_JOBS,
    fourth_jobs: int = DEFAULT_FOURTH_JOBS,
    copies: int = DEFAULT_COPIES,
    max_iter: int = DEFAULT_ITER,
    log: Any = None,
) -> Any:
    """Train a model from the jobs of every world.

    Args:
        seed: the seed of the simulator, the augmentation and the estimator.
        n_jobs: simulated jobs to draw.
        scenario_jobs: jobs of the second scenario family to draw beside them.
        third_jobs: jobs of the third family to draw beside them.
        fourth_jobs: jobs of the fourth family to draw beside them.
        copies: degraded copies per job.
        max_iter: boosting iterations.
        log: a callable taking a progress line, or None.

    Returns:
        The fitted ``BottleneckModel`` (its metadata holds the training facts and holdout figures).
    """
    from bottleneck_operator import __version__
    from bottleneck_operator.analysis.features.extract import feature_schema_hash
    from bottleneck_operator.analysis.model.training import build_training_set, fit_model

    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    jobs, windows = simulated_windows(seed, n_jobs)
    labels = [j.label for j in jobs]
    scenario_labels, scenario_wins = scenario_windows(seed, scenario_jobs)
    third_labels, third_wins = third_family_windows(seed, third_jobs) if third_jobs else ([], [])
    fourth_labels, fourth_wins = fourth_family_windows(seed, fourth_jobs) if fourth_jobs else ([], [])
    say(
        f"simulated {len(jobs)} unambiguous jobs, {len(scenario_wins)} of the second family, "
        f"{len(third_wins)} of the third and {len(fourth_wins)} of the fourth in {time.perf_counter() - t0:.1f} s"
    )
    worlds = [0] * len(windows) + [1] * len(scenario_wins) + [2] * len(third_wins) + [3] * len(fourth_wins)
    labels += scenario_labels + third_labels + fourth_labels
    data = build_training_set(
        windows + scenario_wins + third_wins + fourth_wins, labels, copies=copies, seed=seed, worlds=worlds
    )
    say(f"{len(data.y)} training rows x {data.x.shape[1]} features in {time.perf_counter() - t0:.1f} s")
    version = f"{__version__}-s{seed}-{feature_schema_hash()[:8]}"
    counts = dict(Counter(y.value for y in labels))
    facts: dict[str, Any] = {"simulated_jobs": len(jobs), "scenario_jobs": len(scenario_wins)}
    facts |= {"third_family_jobs": len(third_wins), "fourth_family_jobs": len(fourth_wins), "jobs_per_class": counts}
    model = fit_model(
        data, seed=seed, version=version, max_iter=max_iter, metadata={**facts, "degraded_copies": copies}
    )
    say(f"fitted in {time.perf_counter() - t0:.1f} s, temperature {model.temperature:.3f}")
    _holdouts(model, seed, n_jobs, (scenario_jobs, third_jobs, fourth_jobs), say)
    return model


def _holdouts(model: Any, seed: int, n_jobs: int, extra: tuple[int, int, int], say: Any) -> None:
    """The card's figures: fresh draws of every world trained on (no seed is a training one's)."""
    hold_jobs, hold_windows = simulated_windows(seed + 1_000_003, max(200, n_jobs // 5), holdout=True)
    note = "windows built directly by the simulator (holdout combinations); `evaluate` goes through Prometheus"
    _holdout(model, "holdout_arrays", note, [j.label for j in hold_jobs], hold_windows, say)
    families = (
        (scenario_windows, "holdout_scenarios", "a fresh draw of the second scenario family"),
        (third_family_windows, "holdout_third", "a fresh draw of the third family"),
        (fourth_family_windows, "holdout_fourth", "a fresh draw of the fourth family"),
    )
    for k, (jobs, (make, key, note)) in enumerate(zip(extra, families, strict=True)):
        if jobs:
            hold_labels, hold_windows = make(seed + (k + 2) * 1_000_000 + 3, max(100, jobs // 5))
            _holdout(model, key, note, hold_labels, hold_windows, say)


def _holdout(model: Any, key: str, note: str, labels: list[Any], windows: list[Any], say: Any) -> None:
    """Verdicts on held-out windows, their figures kept in the model's metadata under ``key``."""
    from bottleneck_operator.analysis.classify import analyze_windows
    from bottleneck_operator.analysis.evaluation.metrics import figures

    verdicts = analyze_windows(windows, model, with_details=False)
    fig = figures([y.value for y in labels], [v.bottleneck.value for v in verdicts], [v.confidence for v in verdicts])
    model.metadata[key] = {"note": note, **fig.as_dict()}
    say(f"{key}: macro-F1 {fig.macro_f1:.3f}, abstention {fig.abstention:.3f}, ECE {fig.ece:.3f}")


def write_card(model: Any, path: Path) -> None:
    """The model card: what the model is, how it was trained, how it scores."""
    from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, feature_schema_hash
    from bottleneck_operator.analysis.model.classifier import MODEL_FILE, TRAINING_FILE

    m = model.metadata
    est = model.estimator
    hold = m.get("holdout_arrays", {})
    per_class = hold.get("per_class", {})
    rows = "\n".join(
        f"| {c} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} | {v['support']} |"
        for c, v in per_class.items()
    )
    text = f"""# Model card: bottleneck classifier

| | |
| --- | --- |
| file | `{MODEL_FILE}` (trees as plain arrays, read without pickle; `{TRAINING_FILE}` is the training artefact, loaded with an explicit trusted-types list) |
| version | `{model.version}` |
| estimator | scikit-learn HistGradientBoostingClassifier ({est.max_iter} iterations, {est.max_leaf_nodes} leaves, learning rate {est.learning_rate}, {est.max_features:.0%} of the features per split), temperature-scaled probabilities (T = {model.temperature:.3f}) |
| classes | {", ".join(c.value for c in model.classes)} (Unknown is an abstention, never predicted) |
| features | {len(FEATURE_NAMES)} (schema hash `{feature_schema_hash()}`; names in the metadata JSON) |
| seed | {m.get("seed")} |
| training data | {m.get("simulated_jobs")} simulated unambiguous jobs{_and_scenarios(m)} ({m.get("jobs_per_class")}), each plus {m.get("degraded_copies")} degraded copies with exporter families dropped; {m.get("training_rows")} rows fitted, {m.get("calibration_rows")} held out for calibration |
| reproduce | `bottleneck-operator train --seed {m.get("seed")} --jobs {m.get("simulated_jobs_requested", m.get("simulated_jobs"))}{_scenario_flag(m)}` |

## Intended use

Classify what limits a GPU training job (IO, CPU, Interconnect, GPU, Memory) from a window of
Prometheus telemetry. Verdicts below the abstain threshold, on windows that are too short or with too
little GPU data are reported as Unknown.

## Training data and its limits

The jobs come from the project's telemetry simulator, which draws hardware (GPU x storage x network),
workloads and cluster conditions within published ranges; the hardware combinations reserved for
evaluation are never drawn for training.{_scenario_text(m)} Families are dropped at random (sidecar, PSI, CFS counters,
resource limits, SM/NVLink profiling fields, whole exporters) so that the model decides from what a
cluster has. It has not been trained on real cluster telemetry: treat confidences on unusual hardware
with care, and check the evidence.

## Figures on held-out simulated jobs (windows built directly)

{hold.get("n", 0)} jobs: macro-F1 {hold.get("macro_f1")}, accuracy {hold.get("accuracy")},
abstention {hold.get("abstention")}, ECE {hold.get("ece")}.

| class | precision | recall | F1 | support |
| --- | --- | --- | --- | --- |
{rows}
{_second_family(m.get("holdout_scenarios"))}{_second_family(m.get("holdout_third"), "third family")}{_second_family(m.get("holdout_fourth"), "fourth family")}
The end-to-end figures through a real Prometheus come from `bottleneck-operator evaluate` (see docs/analysis.md).
"""
    path.write_text(text)


def _and_scenarios(m: dict[str, Any]) -> str:
    second = f", {m['scenario_jobs']} of the second scenario family" if m.get("scenario_jobs") else ""
    third = f", {m['third_family_jobs']} of the third" if m.get("third_family_jobs") else ""
    fourth = f" and {m['fourth_family_jobs']} of the fourth" if m.get("fourth_family_jobs") else ""
    return second + third + fourth


def _scenario_flag(m: dict[str, Any]) -> str:
    second = f" --scenario-jobs {m['scenario_jobs']}" if m.get("scenario_jobs") else ""
    return (
        second
        + f" --third-family-jobs {m.get('third_family_jobs', 0)}"
        + f" --fourth-family-jobs {m.get('fourth_family_jobs', 0)}"
    )


def _scenario_text(m: dict[str, Any]) -> str:
    text = ""
    if m.get("scenario_jobs"):
        text += (
            " Beside them, jobs of the independently written second family, with its own stage-time models,"
            " exporter noise and hardware mix."
        )
    if m.get("third_family_jobs"):
        text += (
            " And jobs of the third family, a pipeline model written from first principles for evaluation"
            " alone and read twice before it became a training world (docs/analysis.md)."
        )
    if m.get("fourth_family_jobs"):
        text += (
            " And jobs of the fourth family, written blind in the same way and read once before it became a"
            " training world."
        )
    return text


def _second_family(hold: dict[str, Any] | None, which: str = "second scenario family") -> str:
    if not hold:
        return ""
    return (
        f"\nOn a fresh draw of the {which} ({hold.get('n', 0)} jobs): macro-F1 {hold.get('macro_f1')}, "
        f"accuracy {hold.get('accuracy')}, abstention {hold.get('abstention')}, ECE {hold.get('ece')}.\n"
    )


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.analysis.model.classifier import MODEL_DIR, save_model
    from bottleneck_operator.errors import UsageError

    if args.jobs < 50:
        raise UsageError("--jobs must be at least 50")
    for flag in ("scenario_jobs", "third_family_jobs", "fourth_family_jobs"):
        if getattr(args, flag) < 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be 0 or more")
    out = args.output or MODEL_DIR

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    model = train(
        args.seed,
        args.jobs,
        scenario_jobs=args.scenario_jobs,
        third_jobs=args.third_family_jobs,
        fourth_jobs=args.fourth_family_jobs,
        copies=args.copies,
        max_iter=args.max_iter,
        log=say,
    )
    model.metadata["simulated_jobs_requested"] = args.jobs
    model_path, meta_path = save_model(model, out)
    write_card(model, out / "MODEL_CARD.md")
    size = model_path.stat().st_size / 1e6
    print(f"wrote {model_path} ({size:.2f} MB), {meta_path}, {out / 'MODEL_CARD.md'}")
    return 0
