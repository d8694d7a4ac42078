"""The leave-one-family-out benchmark scores the class a user reads: an Unknown is never a hit."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.bench_crossfamily import family_a, family_b
from bench.bench_lofo import Score, Size, fit, score, summary

TINY = Size(train_jobs=100, eval_jobs=60, max_iter=15, copies=1)


@pytest.mark.slow
@pytest.mark.timeout(900)  # trains a small model: minutes when the machine's cores are shared
def test_a_family_scored_by_the_others_model_counts_abstentions_as_misses() -> None:
    model = fit(*family_b(3, TINY.train_jobs), seed=3, size=TINY)
    windows, labels = family_a(4, TINY.eval_jobs)
    scored = score(model, windows, labels)
    # across families a model of the other one still reads far above chance (0.2 for five classes)
    assert 0.3 < scored.macro_f1 <= 1.0 and 0.0 <= scored.abstention < 0.5
    # windows with no pods get Unknown from the data checks: every one an abstention, none right,
    # whatever the model leans to
    empty = [replace(w, pods=()) for w in windows]
    assert score(model, empty, labels) == Score(macro_f1=0.0, lowest_recall=0.0, abstention=1.0)


def test_the_summary_gives_each_directions_median_and_spread_over_seeds() -> None:
    seeds = [
        {"A -> B": Score(0.80, 0.60, 0.05), "B -> A": Score(0.91, 0.85, 0.02)},
        {"A -> B": Score(0.86, 0.70, 0.07), "B -> A": Score(0.90, 0.80, 0.04)},
        {"A -> B": Score(0.83, 0.65, 0.06), "B -> A": Score(0.93, 0.90, 0.03)},
    ]
    right = [{"A": 24, "A+B": 28}, {"A": 25, "A+B": 27}, {"A": 26, "A+B": 27}]
    assert summary(seeds, right, 31) == [
        "A -> B: macro-F1 median 0.830 (spread 0.800-0.860), lowest class recall 0.650, abstention 0.060: "
        "below the 0.9 target",
        "B -> A: macro-F1 median 0.910 (spread 0.900-0.930), lowest class recall 0.850, abstention 0.030: "
        "meets the 0.9 target",
        "real recordings, model of A: median 25 of 31 right (24, 25, 26)",
        "real recordings, model of A+B: median 27 of 31 right (28, 27, 27)",
    ]
