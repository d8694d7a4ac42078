"""The cross-family benchmark runs end to end at a tiny size and its figures make sense."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.bench_crossfamily import cross_family, format_direction


@pytest.mark.slow
@pytest.mark.timeout(900)  # trains two small models: minutes when the machine's cores are shared
def test_cross_family_smoke() -> None:
    directions = cross_family(100, 60, max_iter=15, seed=3)
    assert [(d.train, d.test) for d in directions] == [("A", "B"), ("B", "A"), ("A", "A"), ("B", "B")]
    for d in directions:
        fig = d.figures
        assert 0.0 <= fig.macro_f1 <= 1.0 and 0.0 <= fig.accuracy <= 1.0
        assert all(0.0 <= c.recall <= 1.0 for c in fig.per_class.values())
        assert "macro-F1" in format_direction(d)
        right, unknown, wrong = d.end_to_end
        assert right + unknown + wrong == fig.n and min(right, unknown, wrong) >= 0
    # in-family figures far above chance (0.2 for five balanced classes): the pipeline works
    assert directions[2].figures.accuracy > 0.5 and directions[3].figures.accuracy > 0.5
    # across families: still above chance
    assert directions[0].figures.accuracy > 0.25 and directions[1].figures.accuracy > 0.25
