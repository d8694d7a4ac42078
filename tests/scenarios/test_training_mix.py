"""Training with scenario families beside the simulator (`train --families`), on small models."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.errors import UsageError
from bottleneck_operator_dev.commands.train import DEFAULT_FAMILIES, main, model_version, train, write_card
from bottleneck_operator_dev.worlds import WORLDS, format_families, parse_families, world_windows


@pytest.fixture(scope="module")
def mixed() -> Any:
    return train(5, 60, families={"B": 25, "C": 20, "D": 15, "E": 10}, copies=1, max_iter=5)


def test_training_counts_every_family_and_scores_each(mixed: Any) -> None:
    meta = mixed.metadata
    assert meta["family_jobs"] == {"B": 25, "C": 20, "D": 15, "E": 10}
    assert sum(meta["jobs_per_class"].values()) == meta["simulated_jobs"] + 25 + 20 + 15 + 10
    assert meta["holdout_arrays"]["n"] >= 200
    for letter in "BCDE":  # a fresh draw of each, never the training one's
        assert meta[f"holdout_{letter}"]["n"] == 100 and 0.0 <= meta[f"holdout_{letter}"]["macro_f1"] <= 1.0
    # across several worlds the temperature comes from each world scored by a model of the others
    assert meta["calibration"] == "across 5 worlds"


def test_the_simulator_alone_when_asked() -> None:
    model = train(5, 60, families={}, copies=1, max_iter=5)
    meta = model.metadata
    assert meta["family_jobs"] == {}
    assert not [k for k in meta if k.startswith("holdout_") and k != "holdout_arrays"]
    assert meta["calibration"] == "held-out jobs"


def test_a_family_with_no_jobs_is_left_out() -> None:
    model = train(5, 60, families={"B": 20, "C": 0}, copies=1, max_iter=5)
    assert model.metadata["family_jobs"] == {"B": 20}
    assert "holdout_C" not in model.metadata


@pytest.mark.parametrize("letter", sorted(WORLDS))
def test_every_listed_family_draws_labelled_windows(letter: str) -> None:
    labels, windows = world_windows(letter, 4, 5)
    assert len(labels) == len(windows) == 5
    assert {type(y) for y in labels} == {Bottleneck}
    assert all(w.pods for w in windows)


def test_families_parse_and_format_round_trip() -> None:
    assert parse_families("B=2000, c=10,E=0") == {"B": 2000, "C": 10, "E": 0}
    assert parse_families("none") == {} == parse_families("")
    assert parse_families(format_families(DEFAULT_FAMILIES)) == DEFAULT_FAMILIES
    assert format_families({}) == "none"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("AO=10", "unknown family 'AO'"),  # not listed (none yet, or stored for a blind reading): not a world
        ("A=10", "A is the simulator, --jobs"),
        ("B=-1", "JOBS a whole number of 0 or more"),
        ("B", "write LETTER=JOBS"),
        ("B=1,B=2", "family B is given twice"),
    ],
)
def test_a_bad_families_value_is_a_usage_error(tmp_path: Path, value: str, says: str) -> None:
    args = argparse.Namespace(
        jobs=100, seed=7, copies=1, max_iter=5, output=tmp_path, families=value, calibration_families="none"
    )
    with pytest.raises(UsageError, match="--families: .*" + says.replace("(", r"\(").replace(")", r"\)")):
        main(args)
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_card_says_what_the_model_learned_from(mixed: Any, tmp_path: Path) -> None:
    write_card(mixed, tmp_path / "card.md")
    card = (tmp_path / "card.md").read_text()
    assert ", 25 of family B, 20 of family C, 15 of family D, 10 of family E (" in card
    assert "--families B=25,C=20,D=15,E=10`" in card  # no calibration world: none named
    assert "calibration world" not in card
    for letter, n in (("B", 100), ("C", 100), ("D", 100), ("E", 100)):
        assert f"On a fresh draw of family {letter} ({n} jobs)" in card
        assert WORLDS[letter].about in card


def test_a_model_of_other_worlds_carries_another_version() -> None:
    """The version names the recipe: the same recipe gives the same version, another world list,
    job count, copy count or iteration count another one."""

    def version(families: dict[str, int] = DEFAULT_FAMILIES, n_jobs: int = 4000, copies: int = 3, it: int = 100) -> str:
        return model_version("0.1.0", 7, n_jobs=n_jobs, families=families, copies=copies, max_iter=it)

    same = version()
    assert same == version(dict(DEFAULT_FAMILIES))
    assert same.startswith("0.1.0-s7-") and len(same.rsplit("-", 1)[1]) == 8
    others = {version({**DEFAULT_FAMILIES, "G": 2000}), version(n_jobs=2000), version(copies=1), version(it=60)}
    assert len({same, *others}) == 5
    # the same recipe over training rows that moved (a simulator changed) is another model
    recipe = {"n_jobs": 4000, "families": DEFAULT_FAMILIES, "copies": 3, "max_iter": 100}
    assert model_version("0.1.0", 7, **recipe, data="aa") != model_version("0.1.0", 7, **recipe, data="ab")
    # calibration worlds name another model, by their counts and by their rows
    calibrated = {
        model_version("0.1.0", 7, **recipe, calibration=({"G": n}, d)) for n, d in ((10, "x"), (20, "x"), (10, "y"))
    }
    assert len(calibrated) == 3 and model_version("0.1.0", 7, **recipe) not in calibrated


def test_calibration_worlds_fit_the_temperature_and_are_named_on_the_card(mixed: Any, tmp_path: Path) -> None:
    calibrated = train(
        5, 60, families={"B": 25, "C": 20, "D": 15, "E": 10}, calibration={"G": 15}, copies=1, max_iter=5
    )
    assert calibrated.metadata["calibration_jobs"] == {"G": 15}
    assert calibrated.metadata["calibration"].startswith("across 5 worlds and 1 calibration world the trees never saw")
    assert calibrated.temperature != mixed.temperature and calibrated.version != mixed.version
    write_card(calibrated, tmp_path / "card.md")
    card = (tmp_path / "card.md").read_text()
    assert "--families B=25,C=20,D=15,E=10 --calibration-families G=15`" in card
    assert "fitted across 5 worlds and 1 calibration world the trees never saw" in card


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("Q=x", "--calibration-families: 'Q=x': write LETTER=JOBS"),
        ("B=10", "family B is in --families and --calibration-families"),
    ],
)
def test_a_bad_calibration_value_is_a_usage_error(tmp_path: Path, value: str, says: str) -> None:
    args = argparse.Namespace(
        jobs=100, seed=7, copies=1, max_iter=5, output=tmp_path, families="B=10", calibration_families=value
    )
    with pytest.raises(UsageError, match=says):
        main(args)
    assert not list(tmp_path.iterdir())
