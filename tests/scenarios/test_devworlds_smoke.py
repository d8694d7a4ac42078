"""The development-worlds benchmark reads the shipped model on every world it was not trained on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import bench.bench_devworlds as dev
from bench.bench_blind import BLIND, DEV_WORLDS, SHIPPED_WORLDS, Scored


def test_the_development_worlds_are_every_listed_world_outside_the_shipped_recipe() -> None:
    worlds = dev.development_worlds()
    assert "G" in worlds and "AN" in worlds
    assert not {"A", *SHIPPED_WORLDS} & set(worlds)
    assert "AO" not in worlds  # stored for a blind reading: never listed, never read here
    # the blind bench's recipes draw them all but the family it reads
    # (before its reading the blind family is not listed at all; after it, it is a world they skip)
    assert tuple(w for w in worlds if w != BLIND) == DEV_WORLDS


def test_a_world_is_scored_as_a_user_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from bottleneck_operator.analysis.model.classifier import load_model

    monkeypatch.setattr(dev, "JOBS", 40)
    row = dev.read_world("G", load_model())
    s = row.scored
    assert 0.0 <= s.macro_f1 <= 1.0 and 0.0 <= s.abstention <= 1.0
    assert 0 <= s.sure_wrong <= s.wrong <= 40
    assert row.lowest[1] == min(s.recall.values())


def test_a_world_meets_the_targets_only_when_every_figure_does() -> None:
    good = Scored(0.93, {"IO": 0.9, "CPU": 0.85}, 0.05, 0.02, 3, 0)
    assert dev.WorldScore("G", good).meets
    assert not dev.WorldScore("G", Scored(0.93, {"IO": 0.9, "CPU": 0.7}, 0.05, 0.02, 3, 0)).meets
    assert not dev.WorldScore("G", Scored(0.93, {"IO": 0.9, "CPU": 0.85}, 0.15, 0.02, 3, 0)).meets
    assert not dev.WorldScore("G", Scored(0.85, {"IO": 0.9, "CPU": 0.85}, 0.05, 0.02, 3, 0)).meets
