"""Leave one family out: train on the other worlds, score the class a user reads on the one left out.

The yardstick for changes meant to make the classifier hold on telemetry it was not fitted to. The worlds
are those the shipped model is trained on (``BENCH_LOFO_FAMILIES``, default A-F, H and I): family A (the
project's simulator), B (the second scenario family), C (``blindfamily``), D (``familyd``), E
(``familye``), F (``familyf``), H (``familyh``) and I (``familyi``); C-I were written blind and became
training worlds after each was read (G and J-AC, read too, are development worlds; any may be added by name).
For each family, a model is trained on the others as ``bottleneck-operator train`` trains the shipped one
(the simulator's Jobs twice as many as each other family's, degraded copies, the same estimator, the
temperature fitted across the worlds) and scored on a fresh draw of the held-out family through the whole
class path (``analysis.classify.analyze_windows``: data checks, envelope, vetoes). An Unknown is an
abstention, never a hit. Printed per held-out family, over three seeds: the median and spread of
macro-F1, the lowest class recall (naming the class), the abstention, the ECE of the named verdicts and
the share of wrong verdicts at 0.9 or more. A change is judged on these medians: a gain smaller than the
spread is noise. Beside them, the real recordings (``tests/data/real-*``, ``gpu-*``, replayed once
through a Prometheus each) read by each seed's model of every world: truth that no family generated;
with every field, and the GPU recordings again with DEV fields only (as a cluster whose dcgm-exporter
collects no profiling fields gets them, the suite's regression check of the same name).

Sizes (environment): ``BENCH_LOFO_TRAIN`` Jobs per training family (default 600; the simulator draws
twice as many, as ``train`` does), ``BENCH_LOFO_EVAL`` evaluated (400), ``BENCH_LOFO_ITER`` boosting
iterations (60), ``BENCH_LOFO_COPIES`` degraded copies per Job (1), ``BENCH_LOFO_SEEDS`` (11,21,31),
``BENCH_LOFO_REAL=0`` skips the recordings, ``BENCH_LOFO_HELD=0`` reads only the recordings (no family
held out: the model of every world alone, to set a baseline for them), ``BENCH_LOFO_ALWAYS`` names
worlds every model trains on and none holds out (a candidate recipe judged on the worlds it already
has: ``G,J,K``), ``BENCH_LOFO_CALIBRATE`` names worlds whose Jobs (as many as each training family's)
only fit each model's temperature, scored by that model, never its trees, ``BENCH_LOFO_PAIRS=1`` adds the former A <-> B lines (one family trained, the other
scored), ``BENCH_LOFO_SIM_SHARE`` the simulator's Jobs as a multiple of each family's (2, as ``train``'s
default recipe draws them; a recipe that spreads the same Jobs over more worlds raises it). With six
families, one seed at the defaults took 219 s on one quiet core (``BENCH_LOFO_SEEDS=11``,
``OMP_NUM_THREADS=1``); with four, the three seeds took 206 s on the two cores when they were quiet and
1,299 s when other jobs shared them (load average 4-8); 200 training Jobs per family, 200 evaluated and
one seed (``BENCH_LOFO_SEEDS=11``) take well under a minute on quiet cores.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from bench.bench_crossfamily import family_a, recorded, world_family
from bottleneck_operator_dev.worlds import WORLDS

TRAIN_JOBS = int(os.environ.get("BENCH_LOFO_TRAIN", "600"))
EVAL_JOBS = int(os.environ.get("BENCH_LOFO_EVAL", "400"))
MAX_ITER = int(os.environ.get("BENCH_LOFO_ITER", "60"))
COPIES = int(os.environ.get("BENCH_LOFO_COPIES", "1"))
SEEDS = tuple(int(v) for v in os.environ.get("BENCH_LOFO_SEEDS", "11,21,31").split(","))
WITH_REAL = os.environ.get("BENCH_LOFO_REAL", "1") != "0"
WITH_PAIRS = os.environ.get("BENCH_LOFO_PAIRS", "0") == "1"
WITH_HELD = os.environ.get("BENCH_LOFO_HELD", "1") != "0"
# issue targets for the class a user reads on a family the model never saw
TARGET, TARGET_RECALL, TARGET_ABSTAIN, TARGET_ECE, TARGET_SURE_WRONG = 0.90, 0.80, 0.10, 0.05, 0.2
# the simulator, and every family ``worlds.py`` lists, by letter
ALL_FAMILIES: dict[str, Callable[[int, int], tuple[list[Any], list[str]]]] = {
    "A": family_a,
    **{letter: partial(world_family, letter) for letter in WORLDS},
}


def world_letters(text: str, *, held_out: Sequence[str] = ()) -> list[str]:
    """The worlds named in ``text`` ("A,B,..."), each known and none also held out.

    Raises:
        SystemExit: a letter names no world, or a world is named twice or is also held out.
    """
    letters = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in letters if k not in ALL_FAMILIES]
    if unknown:
        raise SystemExit(f"unknown world(s) {', '.join(unknown)}: choose from {', '.join(ALL_FAMILIES)}")
    twice = sorted({k for k in letters if letters.count(k) > 1 or k in held_out})
    if twice:
        raise SystemExit(f"world(s) {', '.join(twice)} named twice (held out and always trained on, or repeated)")
    return letters


# ``BENCH_LOFO_FAMILIES`` picks the worlds (default the eight the shipped model is trained on)
FAMILIES = {k: ALL_FAMILIES[k] for k in world_letters(os.environ.get("BENCH_LOFO_FAMILIES", "A,B,C,D,E,F,H,I"))}
# worlds every model trains on beside the others and none holds out (``BENCH_LOFO_ALWAYS``, default none)
ALWAYS = world_letters(os.environ.get("BENCH_LOFO_ALWAYS", ""), held_out=list(FAMILIES))
TRAINED = [*FAMILIES, *ALWAYS]  # every world a model of this run trains on
# worlds whose Jobs only fit each model's temperature, scored by that model (``BENCH_LOFO_CALIBRATE``)
CALIBRATE = world_letters(os.environ.get("BENCH_LOFO_CALIBRATE", ""), held_out=TRAINED)
# the shipped recipe draws the simulator's Jobs twice as many as each other family's (train.py)
RECIPE_SHARE = {"A": int(os.environ.get("BENCH_LOFO_SIM_SHARE", "2"))}


@dataclass(frozen=True)
class Score:
    """The class a user reads on one evaluation set."""

    macro_f1: float
    lowest_recall: float
    abstention: float
    lowest_class: str = ""
    ece: float = 0.0  # over the named verdicts
    sure_wrong: float = 0.0  # share of the wrong named verdicts at confidence 0.9 or more


@dataclass(frozen=True)
class Size:
    """How much a run trains and evaluates."""

    train_jobs: int = TRAIN_JOBS
    eval_jobs: int = EVAL_JOBS
    max_iter: int = MAX_ITER
    copies: int = COPIES


def fit(
    windows: Sequence[Any], labels: Sequence[str], *, seed: int, size: Size, worlds: Sequence[int] | None = None
) -> Any:
    """A model fitted as the shipped one is (degraded copies, the same estimator), at the bench's size."""
    from bottleneck_operator.analysis.model.training import build_training_set, fit_model
    from bottleneck_operator.contract.verdict import Bottleneck

    data = build_training_set(windows, [Bottleneck(v) for v in labels], copies=size.copies, seed=seed, worlds=worlds)
    return fit_model(data, seed=seed, version=f"lofo-s{seed}", max_iter=size.max_iter)


def join_sets(sets: dict[str, Any], names: Sequence[str]) -> Any:
    """The named families' training sets as one, each family its own world and its Jobs' groups apart."""
    import numpy as np

    from bottleneck_operator.analysis.model.training import TrainingSet

    parts = [sets[n] for n in names]
    offsets = np.cumsum([0] + [int(p.groups.max()) + 1 for p in parts[:-1]])
    return TrainingSet(
        x=np.concatenate([p.x for p in parts]),
        y=np.concatenate([p.y for p in parts]),
        groups=np.concatenate([p.groups + o for p, o in zip(parts, offsets, strict=True)]),
        worlds=np.concatenate([np.full(len(p.y), i, dtype=np.intp) for i, p in enumerate(parts)]),
    )


def world_set(letter: str, seed: int, n: int, *, copies: int) -> Any:
    """``n`` Jobs of one world as a training set, each with ``copies`` degraded copies."""
    from bottleneck_operator.analysis.model.training import build_training_set
    from bottleneck_operator.contract.verdict import Bottleneck

    windows, labels = ALL_FAMILIES[letter](seed, n)
    return build_training_set(windows, [Bottleneck(v) for v in labels], copies=copies, seed=seed)


def training_sets(seed: int, size: Size, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Each family's training set (``names``, default ``FAMILIES``) as the shipped recipe draws it (the
    simulator's Jobs twice as many)."""
    return {
        name: world_set(name, seed, size.train_jobs * RECIPE_SHARE.get(name, 1), copies=size.copies)
        for name in (TRAINED if names is None else names)
    }


def fit_worlds(
    sets: dict[str, Any], names: Sequence[str], *, seed: int, size: Size, calibration: Sequence[str] = ()
) -> Any:
    """A model of the named families' training sets, each its own world (the temperature across them, and
    across the ``calibration`` worlds' sets as the model itself scores them)."""
    from bottleneck_operator.analysis.model.training import fit_model

    cal = join_sets(sets, calibration) if calibration else None
    return fit_model(
        join_sets(sets, names), seed=seed, version=f"lofo-s{seed}", max_iter=size.max_iter, calibration=cal
    )


def score(model: Any, windows: Sequence[Any], labels: Sequence[str]) -> Score:
    """Macro-F1, the lowest class recall, the abstention and the calibration of the class a user reads."""
    from bottleneck_operator.analysis.classify import analyze_windows
    from bottleneck_operator.analysis.evaluation.metrics import figures

    verdicts = analyze_windows(windows, model, with_details=False)
    named = [v.bottleneck.value for v in verdicts]
    fig = figures(list(labels), named, [v.confidence for v in verdicts])
    lowest = min(fig.per_class, key=lambda c: fig.per_class[c].recall)
    wrong = [v.confidence for v, y in zip(verdicts, labels, strict=True) if v.bottleneck.value not in (y, "Unknown")]
    sure = sum(c >= 0.9 for c in wrong) / len(wrong) if wrong else 0.0
    return Score(fig.macro_f1, fig.per_class[lowest].recall, fig.abstention, lowest, fig.ece or 0.0, sure)


def real_right(model: Any, real: dict[str, tuple[Any, str]]) -> tuple[int, list[str]]:
    """Recordings whose class a user reads is the recorded one, and the names of the others."""
    from bottleneck_operator.analysis.classify import analyze_windows

    names = sorted(real)
    verdicts = analyze_windows([real[n][0] for n in names], model, with_details=False)
    wrong = [
        f"{n} ({v.bottleneck.value})" for n, v in zip(names, verdicts, strict=True) if v.bottleneck.value != real[n][1]
    ]
    return len(names) - len(wrong), wrong


def dev_only(real: dict[str, tuple[Any, str]]) -> dict[str, tuple[Any, str]]:
    """The GPU recordings as a cluster without DCGM profiling fields gets them."""
    from recordings.replay import is_gpu_recording, without_profiling

    return {n: (without_profiling(w), truth) for n, (w, truth) in real.items() if is_gpu_recording(n)}


def read_recordings(
    model: Any, real: dict[str, tuple[Any, str]], *, seed: int, name: str
) -> dict[str, tuple[int, int]]:
    """The recordings read by ``model``, with every field and with DEV fields only, printed; right and of how many."""
    right: dict[str, tuple[int, int]] = {}
    for how, recs in ((name, real), (f"{name}, DEV fields only", dev_only(real))):
        got, wrong = real_right(model, recs)
        right[how] = (got, len(recs))
        print(
            f"seed {seed}, model of {how}: {got} of {len(recs)} recordings right; wrong: {', '.join(wrong) or 'none'}",
            flush=True,
        )
    return right


def _line(name: str, s: Score) -> str:
    return (
        f"{name}: macro-F1 {s.macro_f1:.3f}, lowest class recall {s.lowest_recall:.3f} ({s.lowest_class}), "
        f"abstention {s.abstention:.3f}, ECE {s.ece:.3f}, wrong at >= 0.9 {s.sure_wrong:.2f}"
    )


def run_seed(
    seed: int, real: dict[str, tuple[Any, str]] | None, size: Size = Size()
) -> tuple[dict[str, Score], dict[str, tuple[int, int]]]:
    """One seed: each family scored by a model of the others, and the model of them all on the
    recordings (and, with ``BENCH_LOFO_PAIRS=1``, A -> B and B -> A)."""
    sets = training_sets(seed, size, [*TRAINED, *CALIBRATE])
    held = {name: make(seed + 1, size.eval_jobs) for name, make in FAMILIES.items()} if WITH_HELD else {}
    scores: dict[str, Score] = {}
    for out in held:
        rest = [*(n for n in FAMILIES if n != out), *ALWAYS]
        model = fit_worlds(sets, rest, seed=seed, size=size, calibration=CALIBRATE)
        scores[f"{'+'.join(rest)} -> {out}"] = score(model, *held[out])
    if WITH_PAIRS and WITH_HELD:
        for a, b in (("A", "B"), ("B", "A")):
            scores[f"{a} -> {b}"] = score(fit_worlds(sets, [a], seed=seed, size=size), *held[b])
    for name, s in scores.items():
        print(f"seed {seed}, {_line(name, s)}", flush=True)
    right: dict[str, tuple[int, int]] = {}
    if real:
        model = fit_worlds(sets, TRAINED, seed=seed, size=size, calibration=CALIBRATE)
        right = read_recordings(model, real, seed=seed, name="+".join(TRAINED))
    return scores, right


def main() -> None:
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    t = time.perf_counter()
    size = Size()
    always = f" ({'+'.join(ALWAYS)} always trained on)" if ALWAYS else ""
    always += f" (temperature also on {'+'.join(CALIBRATE)})" if CALIBRATE else ""
    print(
        f"leave one family out of {len(FAMILIES)}{always}, the class a user reads (Unknown is an abstention, never a hit): "
        f"{size.train_jobs} training jobs per family (the simulator {size.train_jobs * RECIPE_SHARE['A']}), "
        f"{size.eval_jobs} evaluated, degraded copies per job {size.copies}, {size.max_iter} iterations, seeds {SEEDS}",
        flush=True,
    )
    notes: list[str] = []
    real = recorded(notes) if WITH_REAL else None
    for note in notes:
        print(f"real recordings skipped: {note}")
    runs = []
    for seed in SEEDS:
        with threadpool_limits(limits=2):
            runs.append(run_seed(seed, real, size))
    for line in summary([r[0] for r in runs], [r[1] for r in runs]):
        print(line)
    print(f"({time.perf_counter() - t:.1f} s)")


def summary(scores: Sequence[dict[str, Score]], right: Sequence[dict[str, tuple[int, int]]]) -> list[str]:
    """The lines a change is judged on: each held-out family's medians over seeds with the spread of
    macro-F1, and the recordings each model reads right."""
    lines = []
    for direction in scores[0]:
        each = [s[direction] for s in scores]
        f1 = [s.macro_f1 for s in each]
        low = min(each, key=lambda s: s.lowest_recall)
        recall = statistics.median(s.lowest_recall for s in each)
        abstain = statistics.median(s.abstention for s in each)
        ece = statistics.median(s.ece for s in each)
        sure = statistics.median(s.sure_wrong for s in each)
        met = statistics.median(f1) >= TARGET and recall >= TARGET_RECALL and abstain <= TARGET_ABSTAIN
        lines.append(
            f"{direction}: macro-F1 median {statistics.median(f1):.3f} (spread {min(f1):.3f}-{max(f1):.3f}), "
            f"lowest class recall {recall:.3f} (lowest of all {low.lowest_recall:.3f}, {low.lowest_class}), "
            f"abstention {abstain:.3f}, ECE {ece:.3f}, wrong at >= 0.9 {sure:.2f}: "
            f"{'meets' if met else 'below'} the targets (F1 {TARGET}, recall {TARGET_RECALL}, abstention "
            f"{TARGET_ABSTAIN}; ECE {TARGET_ECE}, wrong at >= 0.9 {TARGET_SURE_WRONG})"
        )
    for name in right[0] if right else ():
        got = [r[name][0] for r in right]
        lines.append(
            f"real recordings, model of {name}: median {statistics.median(got):g} of {right[0][name][1]} right "
            f"({', '.join(map(str, got))})"
        )
    return lines


if __name__ == "__main__":
    main()
