"""The held-out evaluation in rounds: disjoint seeds, every job counted once, figures aggregated."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bottleneck_operator.analysis.verdict import Bottleneck, Verdict
from bottleneck_operator.commands.evaluate import format_report, round_seeds, score
from bottleneck_operator.commands.train import DEFAULT_SEED as TRAIN_SEED

from .synth import make_window


def test_rounds_cover_every_job_with_distinct_seeds() -> None:
    rounds = round_seeds(250, 90_210, 80)
    assert [n for _, n in rounds] == [80, 80, 80, 10]
    seeds = [s for s, _ in rounds]
    assert seeds[0] == 90_210 and len(set(seeds)) == len(seeds)
    assert TRAIN_SEED not in seeds and TRAIN_SEED + 1_000_003 not in seeds
    assert round_seeds(40, 5, 80) == [(5, 40)]


def _job(name: str, label: Bottleneck, tags: tuple[str, ...]) -> Any:
    params = SimpleNamespace(tags=tags, dcgm_fieldset="shipped", scrape_interval=30.0, sidecar=False)
    return SimpleNamespace(name=name, label=label, params=params)


def _result(bottleneck: Bottleneck, confidence: float) -> Any:
    reason = "too little GPU data" if bottleneck is Bottleneck.UNKNOWN else None
    verdict = Verdict(bottleneck=bottleneck, confidence=confidence, probabilities={}, reason=reason)
    return SimpleNamespace(verdict=verdict, window=make_window(Bottleneck.IO))


def test_score_aggregates_rounds_and_lists_the_errors() -> None:
    jobs = [
        _job("a", Bottleneck.IO, ("network_storage",)),
        _job("b", Bottleneck.IO, ()),
        _job("c", Bottleneck.CPU, ("noisy_neighbour",)),
        _job("d", Bottleneck.CPU, ()),
    ]
    results = [
        _result(Bottleneck.IO, 0.9),
        _result(Bottleneck.CPU, 0.6),
        _result(Bottleneck.CPU, 0.8),
        _result(Bottleneck.UNKNOWN, 0.0),
    ]
    report = score(jobs, results, model_version="m", seed=1, queries=7, rounds=2)
    assert report["jobs"] == 4 and report["rounds"] == 2
    assert report["overall"]["model"]["per_class"]["IO"]["recall"] == 0.5
    assert report["overall"]["model"]["abstention"] == 0.25
    assert report["hard_cases"]["n"] == 2
    assert [e["job"] for e in report["errors"]] == ["b", "d"]
    text = format_report(report)
    assert "misclassified jobs (2)" in text and "b: IO -> CPU" in text and "too little GPU data" in text
