"""The cross-family benchmark runs end to end at a tiny size and its figures make sense."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.bench_crossfamily import cross_family, format_direction, format_real, run_seed


@pytest.mark.slow
@pytest.mark.timeout(900)  # trains two small models: minutes when the machine's cores are shared
def test_cross_family_smoke() -> None:
    directions = cross_family(100, 60, max_iter=15, seed=3)
    assert [(d.train, d.test) for d in directions] == [("A", "B"), ("B", "A"), ("A", "A"), ("B", "B")]
    for d in directions:
        fig = d.figures
        assert 0.0 <= fig.macro_f1 <= 1.0 and 0.0 <= fig.accuracy <= 1.0
        assert all(0.0 <= c.recall <= 1.0 for c in fig.per_class.values())
        line = format_direction(d)
        assert (
            f"classifier macro-F1 {fig.macro_f1:.3f}" in line
            and f"class a user reads macro-F1 {d.analysis.macro_f1:.3f}" in line
        )
        right, unknown, wrong = d.end_to_end
        assert right + unknown + wrong == fig.n and min(right, unknown, wrong) >= 0
        # the analysis's class is scored on every job (an Unknown counts as the class it leans to), and
        # it is right at least wherever the user's verdict is
        assert d.analysis.n == fig.n and round(d.analysis.accuracy * fig.n) >= right
    # in-family figures far above chance (0.2 for five balanced classes): the pipeline works
    assert directions[2].figures.accuracy > 0.5 and directions[3].figures.accuracy > 0.5
    # across families: still above chance
    assert directions[0].figures.accuracy > 0.25 and directions[1].figures.accuracy > 0.25


@pytest.mark.slow
@pytest.mark.prometheus
@pytest.mark.timeout(900)
def test_each_familys_model_meets_the_real_recordings() -> None:
    from recordings.replay import replay

    replayed = replay(["real-cpu", "gpu-compute"])
    real = {n: (result.window, shifted.truth["class"]) for n, (shifted, result) in replayed.items()}
    assert {n: c for n, (_, c) in real.items()} == {"real-cpu": "CPU", "gpu-compute": "GPU"}
    _, checks = run_seed(100, 60, max_iter=15, seed=3, real=real)
    assert [(c.train, c.how) for c in checks] == [
        ("A", "classifier"),
        ("A", "analysis"),
        ("B", "classifier"),
        ("B", "analysis"),
    ]
    for c in checks:
        assert c.total == 2 and {n for n, _, _ in c.wrong} <= set(real)
        assert all(truth == real[n][1] and got != truth for n, truth, got in c.wrong)
        assert f"{2 - len(c.wrong)} of 2 right" in format_real(c)
