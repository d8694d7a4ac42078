"""Training with the second, third and fourth families beside the simulator (`train --scenario-jobs`,
`--third-family-jobs`, `--fourth-family-jobs`), on small models."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.errors import UsageError
from bottleneck_operator_dev.commands.train import main, scenario_windows, train, write_card


@pytest.fixture(scope="module")
def mixed() -> Any:
    return train(5, 60, scenario_jobs=25, third_jobs=20, fourth_jobs=15, copies=1, max_iter=5)


def test_training_counts_both_families_and_scores_each(mixed: Any) -> None:
    meta = mixed.metadata
    assert meta["scenario_jobs"] == 25
    assert meta["third_family_jobs"] == 20
    assert meta["fourth_family_jobs"] == 15
    assert sum(meta["jobs_per_class"].values()) == meta["simulated_jobs"] + 25 + 20 + 15
    assert meta["holdout_arrays"]["n"] >= 200
    assert meta["holdout_scenarios"]["n"] == 100  # a fresh draw, never the training one's
    assert 0.0 <= meta["holdout_scenarios"]["macro_f1"] <= 1.0
    assert meta["holdout_third"]["n"] == 100 and 0.0 <= meta["holdout_third"]["macro_f1"] <= 1.0
    assert meta["holdout_fourth"]["n"] == 100 and 0.0 <= meta["holdout_fourth"]["macro_f1"] <= 1.0
    # across several worlds the temperature comes from each world scored by a model of the others
    assert meta["calibration"] == "across 4 worlds"


def test_the_simulator_alone_when_asked() -> None:
    model = train(5, 60, scenario_jobs=0, third_jobs=0, fourth_jobs=0, copies=1, max_iter=5)
    meta = model.metadata
    assert meta["scenario_jobs"] == 0 and meta["third_family_jobs"] == 0 and meta["fourth_family_jobs"] == 0
    assert not {"holdout_scenarios", "holdout_third", "holdout_fourth"} & set(meta)
    assert meta["calibration"] == "held-out jobs"


def test_scenario_windows_are_labelled_jobs_of_the_second_family() -> None:
    labels, windows = scenario_windows(3, 10)
    assert len(labels) == len(windows) == 10
    assert {type(y) for y in labels} == {Bottleneck}
    assert all(w.pods for w in windows)


@pytest.mark.parametrize("flag", ["scenario_jobs", "third_family_jobs", "fourth_family_jobs"])
def test_a_negative_count_is_a_usage_error(tmp_path: object, flag: str) -> None:
    counts = dict.fromkeys(("scenario_jobs", "third_family_jobs", "fourth_family_jobs"), 0) | {flag: -1}
    args = argparse.Namespace(jobs=100, seed=7, copies=1, max_iter=5, output=tmp_path, **counts)
    with pytest.raises(UsageError, match=f"--{flag.replace('_', '-')} must be 0 or more"):
        main(args)


def test_the_card_says_what_the_model_learned_from(mixed: Any, tmp_path: Path) -> None:
    write_card(mixed, tmp_path / "card.md")
    card = (tmp_path / "card.md").read_text()
    assert ", 25 of the second scenario family, 20 of the third and 15 of the fourth" in card
    assert "--scenario-jobs 25 --third-family-jobs 20 --fourth-family-jobs 15`" in card
    assert "On a fresh draw of the fourth family (100 jobs)" in card
    assert "On a fresh draw of the third family (100 jobs)" in card
    assert "On a fresh draw of the second scenario family (100 jobs)" in card
