"""The held-out evaluation in rounds: disjoint seeds, every job counted once, figures aggregated."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bottleneck_operator.analysis.evaluation.report import format_report
from bottleneck_operator.analysis.evaluation.scoring import round_seeds, score
from bottleneck_operator.contract.verdict import Abstention, Bottleneck, Verdict
from bottleneck_operator_dev.commands.train import DEFAULT_SEED as TRAIN_SEED

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
    unknown = bottleneck is Bottleneck.UNKNOWN
    reason = "too little GPU data" if unknown else None
    verdict = Verdict(
        bottleneck=bottleneck,
        confidence=confidence,
        probabilities={},
        reason=reason,
        abstention=Abstention.LOW_COVERAGE if unknown else None,
    )
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
    assert report["abstentions"]["LowCoverage"] == 1 and report["abstentions"]["OutOfDistribution"] == 0
    assert "abstentions by kind: LowCoverage 1, " in text


def test_sidecar_ablation_strips_only_the_collector_signals_and_scores_both() -> None:
    from bottleneck_operator.analysis.evaluation.report import format_report
    from bottleneck_operator.analysis.evaluation.scoring import sidecar_gain
    from bottleneck_operator.contract.signals import Family, signals_of
    from bottleneck_operator.settings import Settings
    from bottleneck_operator_dev.commands.evaluate import _without_sidecar

    seen: list[Any] = []

    class Recorder:
        """Stands in for the model to see exactly which windows the ablation classifies."""

        version = "m"
        classes = (Bottleneck.CPU, Bottleneck.GPU, Bottleneck.IO, Bottleneck.INTERCONNECT, Bottleneck.MEMORY)

        def predict_proba(self, x: Any) -> Any:
            import numpy as np

            seen.append(x)
            p = np.zeros((len(x), 5))
            p[:, 2] = 1.0  # always IO
            return p

    with_sc = SimpleNamespace(verdict=Verdict(Bottleneck.CPU, 0.9, {}), window=make_window(Bottleneck.IO))
    no_sc = SimpleNamespace(
        verdict=Verdict(Bottleneck.CPU, 0.9, {}), window=make_window(Bottleneck.IO, drop=[Family.SIDECAR])
    )
    assert Family.SIDECAR in with_sc.window.quality.families
    from bottleneck_operator.pipeline import Analyzer

    without = _without_sidecar([with_sc, no_sc], Analyzer.from_settings(Settings(), model=Recorder()))  # type: ignore[arg-type]
    assert without == ["IO", None]  # only the window that had sidecar signals is re-classified
    assert len(seen) == 1 and len(seen[0]) == 1
    jobs = [_job("a", Bottleneck.IO, ("network_storage",)), _job("b", Bottleneck.CPU, ())]
    gain = sidecar_gain(jobs, [with_sc, no_sc], without)
    assert gain["all with sidecar"] == {"n": 1, "with": 0.0, "without": 1.0}
    assert gain["tag=network_storage"]["n"] == 1
    assert set(gain) == {"all with sidecar", "tag=network_storage"}
    report = score(jobs, [with_sc, no_sc], model_version="m", seed=1, queries=1, rounds=1)
    report["sidecar_gain"] = gain
    assert "what the collector sidecar adds" in format_report(report)
    # the stripped copy reached the model with every collector feature missing; the original keeps them
    import numpy as np

    from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, extract_features

    sc_cols = [i for i, n in enumerate(FEATURE_NAMES) if n.startswith("sc_")]
    assert sc_cols and np.isnan(seen[0][0, sc_cols]).all()
    assert not np.isnan(extract_features([with_sc.window])[0, sc_cols]).all()
    assert any(k in signals_of(Family.SIDECAR) for p in with_sc.window.pods for k in p.signals)
