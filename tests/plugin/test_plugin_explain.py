"""`kubectl bottleneck explain CLASS`: meaning, mechanisms, what to try; the docs carry the same text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from _plugin_support import Run

from bottleneck_operator.analysis.explain.advice import ADVICE
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.plugin import classes

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugin.md"


@pytest.mark.parametrize("name", [b.value for b in Bottleneck])
def test_every_class_is_explained(run: Run, name: str) -> None:
    code, out, err = run("explain", name.lower())
    assert code == 0, err
    assert out.startswith(f"CLASS:    {name}\n")
    for section in ("MEANING:", "MECHANISMS:", "WHAT TO TRY:"):
        assert section in out
    cls = classes.lookup(name)
    assert cls is not None and cls.meaning in out
    for action, _ in classes.what_to_try(cls):
        assert action in out


def test_what_to_try_is_the_analysis_advice() -> None:
    for b, advice in ADVICE.items():
        cls = classes.lookup(b.value)
        assert cls is not None
        assert [a for a, _ in classes.what_to_try(cls)] == [a.action for a in advice]


def test_explain_json_and_yaml(run: Run) -> None:
    code, out, _ = run("explain", "Interconnect", "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["class"] == "Interconnect"
    assert {m["name"] for m in data["mechanisms"]} == {"host-to-device copies", "collective communication"}
    code, out, _ = run("explain", "memory", "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["whatToTry"][0]["action"] == "Raise the memory limit"


def test_unknown_class_exits_1(run: Run) -> None:
    code, out, err = run("explain", "disk")
    assert code == 1 and out == ""
    assert err.strip() == 'error: unknown class "disk": want one of IO, CPU, Interconnect, GPU, Memory, Unknown'


def test_docs_carry_the_same_text() -> None:
    text = DOCS.read_text()
    for cls in classes.CLASSES:
        assert classes.markdown(cls) in text, f"docs/plugin.md's {cls.name.value} section drifted from classes.py"
