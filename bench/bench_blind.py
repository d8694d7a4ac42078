"""The blind family: the figure the README leads with.

Family AN (``bottleneck_operator_dev.familyan``) is the blind figure now. It was written and stored
unread by a hand that read neither the analysis, nor the other families, nor their code (docs/familyan.md
says what its author saw), and it is read once, after the class path was frozen (docs/analysis.md says
when). A model is trained on the worlds the shipped model is trained on (``train``'s default
``--families`` beside the simulator), as the shipped model is, only smaller; every Job of AN is analysed
as a user would read it: the verdict's class, an Unknown counted as an abstention, never as a hit.
Printed beside the figure: the abstention rate, each class's recall, the calibration (ECE over the named
verdicts) and how many wrong verdicts were 0.9 sure or more, for three seeds, so that a difference inside
their spread reads as none; the Jobs of each true class (a family's labels need not be balanced); and, for
the first seed, where the wrong verdicts fall by AN's own mechanism.
``BENCH_BLIND_RECIPES`` names the recipes scored beside the shipped one (default none):
``calibrated``, the shipped recipe's trees with the temperature fitted on the twenty-one development
worlds G and J-AC too, as many Jobs of each as of each training family (a change under the rule over
seeds, docs/scenarios.md, not joined and not tried again after AG); ``spread``, the same Jobs spread over
the shipped worlds and the development worlds G and J-AM (tried by the rule over seeds and not joined);
and ``dev``, the development worlds' Jobs beside the shipped ones (each read once blind, none joined:
this says what they would have been worth).
``BENCH_BLIND_TRAIN`` is the Jobs of each family of the shipped recipe (1200; the simulator twice as many),
``BENCH_BLIND_THREADS`` (default 2) caps the threads, for two runs side by side.

Leave-one-family-out among the training worlds is ``bench lofo``'s figure, not this one's. Families G-AM,
each read once blind before AN (docs/analysis.md), are thirty-one development worlds (G and J-AM) and two
training worlds (H, I). AN is read once, after the thirty-eighth freeze (docs/analysis.md says when), and
is spent then (a development world since): these lines reprint that reading, until a family stored
unread takes its place after the next freeze.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.bench_crossfamily import START
from bench.bench_lofo import Size, fit_worlds, world_set
from bottleneck_operator_dev.worlds import WORLDS

TRAIN_JOBS = int(os.environ.get("BENCH_BLIND_TRAIN", "1200"))  # Jobs of each family of the shipped recipe
EVAL_JOBS = int(os.environ.get("BENCH_BLIND_EVAL", "600"))
MAX_ITER = int(os.environ.get("BENCH_BLIND_ITER", "60"))
SEEDS = tuple(int(v) for v in os.environ.get("BENCH_BLIND_SEEDS", "11,21,31").split(","))
THREADS = int(os.environ.get("BENCH_BLIND_THREADS", "2"))
SHIPPED_WORLDS = ("B", "C", "D", "E", "F", "H", "I")
TARGET_F1, TARGET_RECALL, TARGET_ABSTAIN, TARGET_ECE, TARGET_SURE_WRONG = 0.90, 0.80, 0.10, 0.05, 0.2


def development_worlds() -> tuple[str, ...]:
    """Every world ``worlds.py`` lists outside the shipped recipe (the simulator A and its families), in its
    order: each family read once blind and never trained on."""
    return tuple(w for w in WORLDS if w != "A" and w not in SHIPPED_WORLDS)


def meets_targets(macro_f1: float, lowest_recall: float, abstention: float) -> bool:
    """The issue's targets for the class a user reads on a world the model never saw."""
    return macro_f1 >= TARGET_F1 and lowest_recall >= TARGET_RECALL and abstention <= TARGET_ABSTAIN


BLIND = "AN"
# the development worlds the recipes below may draw: all of them but the one read blind here
DEV_WORLDS = tuple(w for w in development_worlds() if w != BLIND)
# the development worlds that fit the calibrated recipe's temperature: those its change was written for
# and measured with (docs/scenarios.md), G to AC; none read since joins them
CALIBRATION_WORLDS = DEV_WORLDS[: DEV_WORLDS.index("AC") + 1]
# The recipes as they stand when AN is read (docs/analysis.md), as Jobs per world the trees train on: the
# shipped one (the simulator's Jobs twice as many as each family's), also the calibrated one's; the same
# Jobs spread over the shipped and the development worlds (docs/scenarios.md: tried, not joined); the
# development worlds beside the shipped ones.
RECIPES = {
    "shipped": {"A": 2 * TRAIN_JOBS, **dict.fromkeys(SHIPPED_WORLDS, TRAIN_JOBS)},
    "spread": {
        "A": 2 * TRAIN_JOBS,
        **dict.fromkeys(
            (*SHIPPED_WORLDS, *DEV_WORLDS), TRAIN_JOBS * len(SHIPPED_WORLDS) // (len(SHIPPED_WORLDS) + len(DEV_WORLDS))
        ),
    },
    "dev": {"A": 2 * TRAIN_JOBS, **dict.fromkeys((*SHIPPED_WORLDS, *DEV_WORLDS), TRAIN_JOBS)},
}
RECIPES["calibrated"] = RECIPES["shipped"]
# Jobs per world that only fit a recipe's temperature, scored by the recipe's own model
CALIBRATION = {"calibrated": dict.fromkeys(CALIBRATION_WORLDS, TRAIN_JOBS)}
# the shipped recipe first: the blind figure
CHOSEN = [
    "shipped",
    *(r for r in os.environ.get("BENCH_BLIND_RECIPES", "").split(",") if r and r != "shipped"),
]


def recipe_name(name: str) -> str:
    """What a printed line calls a recipe: its worlds, and how the Jobs are shared when not as shipped."""
    worlds = "+".join(RECIPES[name])
    if name in CALIBRATION:
        return f"{worlds} (temperature also on {'+'.join(CALIBRATION[name])})"
    return worlds if name == "shipped" else f"{worlds} ({name})"


def family_an(seed: int, n: int) -> tuple[list[Any], list[str], list[str]]:
    """Windows, labels and mechanisms of the thirty-eighth blind family, stored unread until its reading.

    Only the windows, labels and mechanisms are scored, never any other field a Job carries."""
    from bottleneck_operator_dev.familyan import generate_family_an

    jobs = generate_family_an(seed, n, start=START)
    return [j.window for j in jobs], [j.label.value for j in jobs], [j.mechanism for j in jobs]


def recipe_keys(name: str, table: dict[str, dict[str, int]] = RECIPES) -> list[str]:
    """The training sets a recipe is fitted on (or, with ``CALIBRATION``, calibrated on), one per world at
    the count it draws (``letter=count``)."""
    return [f"{k}={n}" for k, n in table.get(name, {}).items()]


def recipe_sets(seed: int, names: Sequence[str], size: Size) -> dict[str, Any]:
    """Each world's training set at each count the named recipes draw it, by ``recipe_keys``."""
    drawn = [(k, n) for table in (RECIPES, CALIBRATION) for name in names for k, n in table.get(name, {}).items()]
    pairs = dict.fromkeys(drawn)
    return {f"{k}={n}": world_set(k, seed, n, copies=size.copies) for k, n in pairs}


@dataclass(frozen=True)
class Scored:
    """What a user reads, scored: the class named, Unknown as an abstention."""

    macro_f1: float
    recall: dict[str, float]
    abstention: float
    ece: float
    wrong: int
    sure_wrong: int  # wrong verdicts at confidence 0.9 or more
    support: dict[str, int] = field(default_factory=dict)  # Jobs of each true class


def score(verdicts: Sequence[Any], labels: Sequence[str]) -> Scored:
    """The named class against the truth; an Unknown is an abstention and never right (nor in the ECE)."""
    from bottleneck_operator.analysis.evaluation.metrics import figures

    fig = figures(list(labels), [v.bottleneck.value for v in verdicts], [v.confidence for v in verdicts])
    wrong = [v for v, y in zip(verdicts, labels, strict=True) if v.bottleneck.value not in (y, "Unknown")]
    return Scored(
        fig.macro_f1,
        {c: f.recall for c, f in fig.per_class.items()},
        fig.abstention,
        fig.ece or 0.0,
        len(wrong),
        sum(v.confidence >= 0.9 for v in wrong),
        {c: f.support for c, f in fig.per_class.items() if f.support},
    )


def run_seed(seed: int) -> tuple[dict[str, Scored], list[str]]:
    """One seed: the shipped recipe -> AN (the blind figure), each other chosen recipe beside it, and the
    shipped recipe's wrong verdicts by AN's mechanism."""
    from bottleneck_operator.analysis.classify import analyze_windows

    size = Size(train_jobs=TRAIN_JOBS, max_iter=MAX_ITER)
    sets = recipe_sets(seed, CHOSEN, size)
    windows, labels, mechanisms = family_an(seed + 1, EVAL_JOBS)
    out: dict[str, Scored] = {}
    misread: list[str] = []
    # AN is never trained on
    for name in CHOSEN:
        model = fit_worlds(sets, recipe_keys(name), seed=seed, size=size, calibration=recipe_keys(name, CALIBRATION))
        verdicts = analyze_windows(windows, model, with_details=False)
        out[f"{recipe_name(name)} -> {BLIND}"] = score(verdicts, labels)
        if name == "shipped":
            misread = _misread(verdicts, labels, mechanisms)
    return out, misread


def _misread(verdicts: Sequence[Any], labels: Sequence[str], mechanisms: Sequence[str]) -> list[str]:
    """Per true class and the blind family's mechanism: Jobs, and what those not read right were read as."""
    from collections import Counter

    groups: dict[tuple[str, str], Counter[str]] = {}
    for v, y, m in zip(verdicts, labels, mechanisms, strict=True):
        groups.setdefault((y, m), Counter())[v.bottleneck.value] += 1
    lines = []
    for (y, m), read in sorted(groups.items()):
        wrong = ", ".join(f"{c} {n}" for c, n in read.most_common() if c != y)
        lines.append(f"  {y} / {m}: {read[y]} of {sum(read.values())} right{'; read ' + wrong if wrong else ''}")
    return lines


def _calibrating(name: str) -> str:
    return f"; temperature also on {CALIBRATION[name]}" if name in CALIBRATION else ""


def _line(name: str, s: Scored) -> str:
    recall = ", ".join(f"{c} {r:.2f}" for c, r in s.recall.items())
    return (
        f"{name}: macro-F1 {s.macro_f1:.3f} (class a user reads), abstention {s.abstention:.3f}, ECE {s.ece:.3f}, "
        f"wrong {s.wrong} of which at >= 0.9: {s.sure_wrong}; recall: {recall}"
        + (f"; Jobs by true class: {', '.join(f'{c} {n}' for c, n in s.support.items())}" if s.support else "")
    )


def main() -> None:
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    t = time.perf_counter()
    print(
        f"blind family {BLIND}; training jobs per world {', '.join(f'{n} ({RECIPES[n]}{_calibrating(n)})' for n in CHOSEN)}, "
        f"{EVAL_JOBS} evaluated, seeds {SEEDS}"
    )
    runs: list[dict[str, Scored]] = []
    for seed in SEEDS:
        with threadpool_limits(limits=THREADS):
            scored, misread = run_seed(seed)
        runs.append(scored)
        print(f"\nseed {seed}:")
        for name, s in scored.items():
            print(_line(name, s))
        if seed == SEEDS[0]:
            print(f"{recipe_name('shipped')} -> {BLIND} by {BLIND}'s mechanism (true class / mechanism):")
            print("\n".join(misread))
    print()
    for name in runs[0]:
        each = [r[name] for r in runs]
        f1 = [s.macro_f1 for s in each]
        med = statistics.median(f1)
        recall = min(statistics.median(s.recall[c] for s in each) for c in each[0].recall)
        abstain = statistics.median(s.abstention for s in each)
        print(
            f"{name}: macro-F1 median {med:.3f} (spread {min(f1):.3f}-{max(f1):.3f}), lowest class recall {recall:.3f}, "
            f"abstention {abstain:.3f}: {'meets' if meets_targets(med, recall, abstain) else 'below'} "
            f"the targets (F1 {TARGET_F1}, recall {TARGET_RECALL}, abstention {TARGET_ABSTAIN})"
        )
    for name in runs[0]:
        blind = [r[name] for r in runs]
        ece = statistics.median(s.ece for s in blind)
        sure = statistics.median(s.sure_wrong / max(s.wrong, 1) for s in blind)
        print(
            f"{name} calibration: ECE median {ece:.3f} (target {TARGET_ECE}), wrong verdicts at "
            f">= 0.9: {sure:.2f} of them (target at most {TARGET_SURE_WRONG})"
        )
    print(f"({time.perf_counter() - t:.1f} s)")


if __name__ == "__main__":
    main()
