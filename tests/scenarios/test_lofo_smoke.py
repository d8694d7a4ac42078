"""The leave-one-family-out benchmark scores the class a user reads: an Unknown is never a hit."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.bench_crossfamily import family_a, world_family
from bench.bench_lofo import Score, Size, fit, join_sets, score, summary, world_letters

TINY = Size(train_jobs=100, eval_jobs=60, max_iter=15, copies=1)


@pytest.mark.slow
@pytest.mark.timeout(900)  # trains a small model: minutes when the machine's cores are shared
def test_a_family_scored_by_the_others_model_counts_abstentions_as_misses() -> None:
    model = fit(*world_family("B", 3, TINY.train_jobs), seed=3, size=TINY)
    windows, labels = family_a(4, TINY.eval_jobs)
    scored = score(model, windows, labels)
    # across families a model of the other one still reads far above chance (0.2 for five classes)
    assert 0.3 < scored.macro_f1 <= 1.0 and 0.0 <= scored.abstention < 0.5
    # windows with no pods get Unknown from the data checks: every one an abstention, none right,
    # whatever the model leans to
    empty = [replace(w, pods=()) for w in windows]
    none = score(model, empty, labels)
    assert (none.macro_f1, none.lowest_recall, none.abstention, none.sure_wrong) == (0.0, 0.0, 1.0, 0.0)
    # the lowest recall names its class, and the calibration reads the named verdicts only
    assert scored.lowest_class in {"IO", "CPU", "Interconnect", "GPU", "Memory"}
    assert 0.0 <= scored.ece <= 1.0 and 0.0 <= scored.sure_wrong <= 1.0


def test_the_summary_gives_each_held_out_familys_median_and_spread_over_seeds() -> None:
    seeds = [
        {
            "B+C+D -> A": Score(0.80, 0.60, 0.05, "GPU", 0.04, 0.10),
            "A+C+D -> B": Score(0.91, 0.85, 0.02, "IO", 0.02, 0.0),
        },
        {
            "B+C+D -> A": Score(0.86, 0.70, 0.07, "IO", 0.06, 0.30),
            "A+C+D -> B": Score(0.90, 0.80, 0.04, "CPU", 0.03, 0.1),
        },
        {
            "B+C+D -> A": Score(0.83, 0.55, 0.06, "Memory", 0.05, 0.20),
            "A+C+D -> B": Score(0.93, 0.90, 0.03, "GPU", 0.01, 0.2),
        },
    ]
    dev = "A+B+C+D, DEV fields only"
    right = [
        {"A+B+C+D": (28, 31), dev: (20, 25)},
        {"A+B+C+D": (27, 31), dev: (21, 25)},
        {"A+B+C+D": (29, 31), dev: (19, 25)},
    ]
    targets = "(F1 0.9, recall 0.8, abstention 0.1; ECE 0.05, wrong at >= 0.9 0.2)"
    assert summary(seeds, right) == [
        "B+C+D -> A: macro-F1 median 0.830 (spread 0.800-0.860), lowest class recall 0.600 (lowest of all 0.550, "
        f"Memory), abstention 0.060, ECE 0.050, wrong at >= 0.9 0.20: below the targets {targets}",
        "A+C+D -> B: macro-F1 median 0.910 (spread 0.900-0.930), lowest class recall 0.850 (lowest of all 0.800, "
        f"CPU), abstention 0.030, ECE 0.020, wrong at >= 0.9 0.10: meets the targets {targets}",
        "real recordings, model of A+B+C+D: median 28 of 31 right (28, 27, 29)",
        "real recordings, model of A+B+C+D, DEV fields only: median 20 of 25 right (20, 21, 19)",
    ]
    # read without holding out a family, only the recordings are summarised
    assert summary([{}, {}, {}], right)[0].startswith("real recordings, model of A+B+C+D: median 28")


def test_a_model_of_several_families_keeps_each_as_its_own_world() -> None:
    """The four-way models are fitted on training sets built one family at a time: each family stays
    a world of its own (the temperature is fitted across them) and no Job's copies share a group
    with another family's Job."""
    import numpy as np

    from bottleneck_operator.analysis.model.training import TrainingSet

    def part(n: int, label: int) -> TrainingSet:
        return TrainingSet(
            x=np.full((2 * n, 3), float(label)),
            y=np.full(2 * n, label, dtype=np.intp),
            groups=np.repeat(np.arange(n, dtype=np.intp), 2),
        )

    data = join_sets({"A": part(3, 0), "B": part(2, 1), "C": part(4, 2)}, ["A", "C"])
    assert data.worlds is not None and data.worlds.tolist() == [0] * 6 + [1] * 8
    assert data.y.tolist() == [0] * 6 + [2] * 8 and data.x[:, 0].tolist() == [0.0] * 6 + [2.0] * 8
    assert sorted(set(data.groups[:6].tolist())) == [0, 1, 2]
    assert sorted(set(data.groups[6:].tolist())) == [3, 4, 5, 6]


def test_worlds_are_named_by_letter_each_once_and_never_both_held_out_and_always_trained_on() -> None:
    assert world_letters("G, J,K") == ["G", "J", "K"] and world_letters("") == []
    with pytest.raises(SystemExit, match=r"unknown world.*AO"):
        world_letters("A,AO")  # a family not listed (none yet, or stored for a blind reading) is not a world
    with pytest.raises(SystemExit, match="B named twice"):
        world_letters("B,G", held_out=["A", "B"])
    with pytest.raises(SystemExit, match="G named twice"):
        world_letters("G,G")
