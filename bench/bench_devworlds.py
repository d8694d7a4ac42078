"""The shipped model on every world it was not trained on: how far one blind figure can be trusted.

A blind family is one draw of what an unseen cluster looks like, and between two families the figure
has moved by up to 0.105 with nothing changed (docs/analysis.md, "Evaluation"). The development worlds
(every family ``worlds.py`` lists beyond the shipped recipe's A-F, H and I: each written blind, read once,
kept out of training) are many such draws. This bench reads each of them with the model the image
ships (``bottleneck-model.npz``, not a retrain), as a user would read it: the verdict's class, an
Unknown counted as an abstention, never as a hit; then the spread over worlds.

These worlds are not blind any more: each was read once and looked at since, and some shaped what the
class path was tried with (docs/scenarios.md). Their figures are off the training worlds, not off
everything the project has seen; the blind family (``bench blind``) stays the figure the README leads
with. ``BENCH_DEV_JOBS`` is the Jobs drawn per world (600), ``BENCH_DEV_SEED`` the generators' seed (12,
the blind bench's first evaluation seed), ``BENCH_DEV_WORLDS`` a comma-separated subset.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench.bench_blind import (
    TARGET_ABSTAIN,
    TARGET_F1,
    TARGET_RECALL,
    Scored,
    development_worlds,
    meets_targets,
    score,
)

JOBS = int(os.environ.get("BENCH_DEV_JOBS", "600"))
SEED = int(os.environ.get("BENCH_DEV_SEED", "12"))
CHOSEN = [w for w in os.environ.get("BENCH_DEV_WORLDS", "").split(",") if w]


@dataclass(frozen=True)
class WorldScore:
    letter: str
    scored: Scored

    @property
    def lowest(self) -> tuple[str, float]:
        return min(self.scored.recall.items(), key=lambda kv: kv[1])

    @property
    def meets(self) -> bool:
        return meets_targets(self.scored.macro_f1, self.lowest[1], self.scored.abstention)


def read_world(letter: str, model: Any) -> WorldScore:
    from bottleneck_operator.analysis.classify import analyze_windows
    from bottleneck_operator_dev.worlds import world_windows

    labels, windows = world_windows(letter, SEED, JOBS)
    verdicts = analyze_windows(windows, model, with_details=False)
    return WorldScore(letter, score(verdicts, [y.value for y in labels]))


def _quartiles(values: list[float]) -> str:
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return f"median {q2:.3f} (quartiles {q1:.3f}-{q3:.3f}, range {min(values):.3f}-{max(values):.3f})"


def main() -> None:
    from bottleneck_operator.analysis.model.classifier import load_model

    t = time.perf_counter()
    model = load_model()
    worlds = CHOSEN or list(development_worlds())
    print(f"the shipped model ({model.version}) on {len(worlds)} development worlds, {JOBS} Jobs each, seed {SEED}")
    rows = []
    for letter in worlds:
        row = read_world(letter, model)
        s, (cls, recall) = row.scored, row.lowest
        print(
            f"{letter}: macro-F1 {s.macro_f1:.3f} (class a user reads), abstention {s.abstention:.3f}, "
            f"lowest recall {recall:.2f} ({cls}), ECE {s.ece:.3f}, wrong {s.wrong} of which at >= 0.9: {s.sure_wrong}"
        )
        rows.append(row)
    if len(rows) >= 2:
        f1 = [r.scored.macro_f1 for r in rows]
        sure = [r.scored.sure_wrong / max(r.scored.wrong, 1) for r in rows]
        print(
            f"\nover {len(rows)} worlds: macro-F1 {_quartiles(f1)}; abstention median "
            f"{statistics.median(r.scored.abstention for r in rows):.3f}; ECE median "
            f"{statistics.median(r.scored.ece for r in rows):.3f}; wrong verdicts at >= 0.9 median {statistics.median(sure):.2f}"
        )
        print(
            f"worlds meeting the targets (F1 {TARGET_F1}, every recall {TARGET_RECALL}, abstention {TARGET_ABSTAIN}): "
            f"{sum(r.meets for r in rows)} of {len(rows)}; lowest recall by class: "
            + ", ".join(f"{c} {n}" for c, n in _lowest_classes(rows))
        )
    print(f"({time.perf_counter() - t:.1f} s)")


def _lowest_classes(rows: list[WorldScore]) -> list[tuple[str, int]]:
    """How often each class is a world's lowest recall: where the model fails off its worlds."""
    from collections import Counter

    return Counter(r.lowest[0] for r in rows).most_common()


if __name__ == "__main__":
    main()
