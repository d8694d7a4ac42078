"""`bottleneck-operator train`: retrain the shipped model from a seed, with its model card.

The training data are several worlds: jobs of the simulator (family A, ``simulation.generate_jobs``,
never the holdout combinations, ``--jobs``) and of the scenario families ``--families`` names
(``worlds.WORLDS``: B, written beside the simulator; C, D and E, each written blind, read once as an
evaluation and a training world since, docs/analysis.md), turned into windows directly, plus degraded
copies that drop exporter families and draw what differs between clusters (``model/training.py``).
The temperature is fitted across the worlds: each world scored by a classifier fitted on the others
alone, so that the confidence says how sure the model may be on a cluster nobody simulated. Fresh
draws of every world give the card's figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from bottleneck_operator_dev.worlds import TRAIN_START, WORLDS, format_families, parse_families, world_windows

DEFAULT_SEED = 7
DEFAULT_JOBS = 4000
# jobs of each scenario family beside the simulator's: every world the model is trained across
DEFAULT_FAMILIES = {"B": 2000, "C": 2000, "D": 2000, "E": 2000, "F": 2000, "H": 2000, "I": 2000}
# development worlds whose Jobs only fit the temperature, never the trees (none by default)
DEFAULT_CALIBRATION: dict[str, int] = {}
DEFAULT_COPIES = 3
# Prediction cost grows with the number of trees (iterations x classes): 100 iterations at a learning
# rate of 0.15 keep features + prediction above 5,000 job windows/s on one core.
DEFAULT_ITER = 100


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "train",
        help="retrain the classifier from simulated jobs",
        description="Retrain the bottleneck classifier from a seed and write the model file, its metadata and card.",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"training seed (default {DEFAULT_SEED})")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"simulated jobs (default {DEFAULT_JOBS})")
    parser.add_argument(
        "--families",
        default=format_families(DEFAULT_FAMILIES),
        metavar="LETTER=JOBS,...",
        help=f"jobs of each scenario family beside them: {', '.join(f'{k} ({w.name})' for k, w in WORLDS.items())} "
        f"(default {format_families(DEFAULT_FAMILIES)}; none: the simulator's alone)",
    )
    parser.add_argument(
        "--calibration-families",
        default=format_families(DEFAULT_CALIBRATION),
        metavar="LETTER=JOBS,...",
        help="jobs of each family that only fit the temperature, scored by the model whose trees never saw them "
        f"(default {format_families(DEFAULT_CALIBRATION)}; a family may not be in --families too)",
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


def train(
    seed: int,
    n_jobs: int,
    *,
    families: dict[str, int] | None = None,
    calibration: dict[str, int] | None = None,
    copies: int = DEFAULT_COPIES,
    max_iter: int = DEFAULT_ITER,
    log: Any = None,
) -> Any:
    """Train a model from the jobs of every world.

    Args:
        seed: the seed of the simulator, the families, the augmentation and the estimator.
        n_jobs: simulated jobs to draw (family A).
        families: jobs of each scenario family to draw beside them, by letter (default ``DEFAULT_FAMILIES``).
        calibration: jobs of each family that fits only the temperature, by letter (default none).
        copies: degraded copies per job.
        max_iter: boosting iterations.
        log: a callable taking a progress line, or None.

    Returns:
        The fitted ``BottleneckModel`` (its metadata holds the training facts and holdout figures).

    Raises:
        ValueError: a family both trained on and calibrating.
    """
    from bottleneck_operator import __version__
    from bottleneck_operator.analysis.model.training import fit_model, stream_training_set

    say = log or (lambda _msg: None)
    counts = dict(DEFAULT_FAMILIES if families is None else families)
    if both := in_both(counts, calibration or {}):
        raise ValueError(f"family {', '.join(both)} is both trained on and calibrating: name it in one list")
    t0 = time.perf_counter()
    jobs, windows = simulated_windows(seed, n_jobs)
    n_sim = len(jobs)
    say(f"simulated {n_sim} unambiguous jobs in {time.perf_counter() - t0:.1f} s")
    drawn: dict[str, int] = {}
    simulated = ((w, j.label, 0) for j, w in zip(jobs, windows, strict=True))
    del jobs, windows  # the rows are all the fit needs: the windows go once the generator has passed them
    data = stream_training_set(chain(simulated, _world_jobs(counts, seed, drawn, first=1)), copies=copies, seed=seed)
    said = "".join(f", {n} of family {k}" for k, n in drawn.items())
    say(f"{len(data.y)} training rows x {data.x.shape[1]} features{said} in {time.perf_counter() - t0:.1f} s")
    cal, cal_drawn = _calibration_set(calibration or {}, seed, copies)
    cal_key = (cal_drawn, cal.digest()) if cal is not None else None
    recipe: dict[str, Any] = {"n_jobs": n_jobs, "families": counts, "copies": copies, "max_iter": max_iter}
    version = model_version(__version__, seed, **recipe, data=data.digest(), calibration=cal_key)
    facts: dict[str, Any] = {"simulated_jobs": n_sim, "family_jobs": drawn, "degraded_copies": copies}
    facts["jobs_per_class"] = _jobs_per_class(data)
    if cal is not None:
        facts["calibration_jobs"] = cal_drawn
        say(f"{len(cal.y)} calibration rows of {format_families(cal_drawn)} in {time.perf_counter() - t0:.1f} s")
    model = fit_model(data, seed=seed, version=version, max_iter=max_iter, metadata=facts, calibration=cal)
    say(f"fitted in {time.perf_counter() - t0:.1f} s, temperature {model.temperature:.3f}")
    _holdouts(model, seed, n_jobs, drawn, say)
    return model


def _jobs_per_class(data: Any) -> dict[str, int]:
    """Jobs of each class in a training set, counted on each Job's own row (the first of its group)."""
    import numpy as np

    from bottleneck_operator.contract.verdict import CLASSES

    first_rows = np.sort(np.unique(data.groups, return_index=True)[1])
    return dict(Counter(CLASSES[i].value for i in data.y[first_rows]))


def in_both(families: dict[str, int], calibration: dict[str, int]) -> list[str]:
    """The families drawn both to train the trees and to fit the temperature: none may be."""
    return sorted(k for k, n in calibration.items() if n and families.get(k))


def _world_jobs(
    counts: dict[str, int], seed: int, drawn: dict[str, int], *, first: int
) -> Iterator[tuple[Any, Any, int]]:
    """Each family's Jobs as (window, label, world) triples, the worlds numbered from ``first``, one
    family's windows drawn at a time (twenty-one families of 2,000 Jobs at once outgrow a 24 GB
    machine); ``drawn`` says how many Jobs each family gave once they are taken."""
    for letter, n in ((k, n) for k, n in counts.items() if n):
        labels, windows = world_windows(letter, seed, n)
        drawn[letter] = len(windows)
        yield from ((w, label, first + len(drawn) - 1) for w, label in zip(windows, labels, strict=True))


def _calibration_set(counts: dict[str, int], seed: int, copies: int) -> tuple[Any, dict[str, int]]:
    """The calibration worlds' Jobs as one set, each world its own, with the training Jobs' degraded
    copies, and how many Jobs each world gave; (None, {}) without any."""
    from bottleneck_operator.analysis.model.training import stream_training_set

    if not any(counts.values()):
        return None, {}
    drawn: dict[str, int] = {}
    return stream_training_set(_world_jobs(counts, seed, drawn, first=0), copies=copies, seed=seed), drawn


def model_version(
    release: str,
    seed: int,
    *,
    n_jobs: int,
    families: dict[str, int],
    copies: int,
    max_iter: int,
    data: str = "",
    calibration: tuple[dict[str, int], str] | None = None,
) -> str:
    """``<release>-s<seed>-<digest>``: the digest covers the feature schema, the whole recipe (jobs,
    families, copies, iterations) and the training rows' own digest (``data``, ``TrainingSet.digest``),
    so a model retrained on other worlds, or on a simulator or family that changed, never carries an
    earlier one's version, and a report says which model it came from. ``calibration`` (the calibration
    worlds' Jobs and their rows' digest) joins the recipe only when there are any, so that a model without
    them keeps the version it always had.
    """
    import hashlib

    from bottleneck_operator.analysis.features.extract import feature_schema_hash

    recipe = f"{feature_schema_hash()}|jobs={n_jobs}|{format_families(families)}|copies={copies}|iter={max_iter}|{data}"
    if calibration is not None:
        recipe += f"|cal={format_families(calibration[0])}|{calibration[1]}"
    return f"{release}-s{seed}-{hashlib.sha256(recipe.encode()).hexdigest()[:8]}"


def _holdouts(model: Any, seed: int, n_jobs: int, drawn: dict[str, int], say: Any) -> None:
    """The card's figures: fresh draws of every world trained on (no seed is a training one's)."""
    hold_jobs, hold_windows = simulated_windows(seed + 1_000_003, max(200, n_jobs // 5), holdout=True)
    note = "windows built directly by the simulator (holdout combinations); `evaluate` goes through Prometheus"
    _holdout(model, "holdout_arrays", note, [j.label for j in hold_jobs], hold_windows, say)
    for k, (letter, n) in enumerate(drawn.items()):
        hold_labels, hold_windows = world_windows(letter, seed + (k + 2) * 1_000_000 + 3, max(100, n // 5))
        _holdout(model, f"holdout_{letter}", f"a fresh draw of {WORLDS[letter].name}", hold_labels, hold_windows, say)


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
| estimator | scikit-learn HistGradientBoostingClassifier ({est.max_iter} iterations, {est.max_leaf_nodes} leaves, learning rate {est.learning_rate}, {est.max_features:.0%} of the features per split), temperature-scaled probabilities (T = {model.temperature:.3f}{_temperature_note(m)}) |
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
{_families_held(m)}
The end-to-end figures through a real Prometheus come from `bottleneck-operator evaluate` (see docs/analysis.md).
"""
    path.write_text(text)


def _temperature_note(m: dict[str, Any]) -> str:
    return f", fitted {m['calibration']}" if m.get("calibration_jobs") else ""


def _and_scenarios(m: dict[str, Any]) -> str:
    return "".join(f", {n} of family {k}" for k, n in m.get("family_jobs", {}).items())


def _scenario_flag(m: dict[str, Any]) -> str:
    cal = m.get("calibration_jobs")
    return f" --families {format_families(m.get('family_jobs', {}))}" + (
        f" --calibration-families {format_families(cal)}" if cal else ""
    )


def _scenario_text(m: dict[str, Any]) -> str:
    return "".join(f" {WORLDS[k].about}" for k in m.get("family_jobs", {}) if k in WORLDS)


def _families_held(m: dict[str, Any]) -> str:
    text = ""
    for k in m.get("family_jobs", {}):
        hold = m.get(f"holdout_{k}")
        if hold:
            text += (
                f"\nOn a fresh draw of family {k} ({hold.get('n', 0)} jobs): macro-F1 {hold.get('macro_f1')}, "
                f"accuracy {hold.get('accuracy')}, abstention {hold.get('abstention')}, ECE {hold.get('ece')}.\n"
            )
    return text


def main(args: argparse.Namespace) -> int:
    from bottleneck_operator.analysis.model.classifier import MODEL_DIR, save_model
    from bottleneck_operator.errors import UsageError

    if args.jobs < 50:
        raise UsageError("--jobs must be at least 50")
    try:
        families = parse_families(args.families)
    except ValueError as exc:
        raise UsageError(f"--families: {exc}") from None
    try:
        calibration = parse_families(args.calibration_families)
    except ValueError as exc:
        raise UsageError(f"--calibration-families: {exc}") from None
    both = in_both(families, calibration)
    if both:
        raise UsageError(f"family {', '.join(both)} is in --families and --calibration-families: name it in one")
    out = args.output or MODEL_DIR

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    model = train(
        args.seed,
        args.jobs,
        families=families,
        calibration=calibration,
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
