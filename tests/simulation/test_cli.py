"""`bottleneck-operator simulate`: files, stdout, ground truth, and clear usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bottleneck_operator.cli import main

START = "1700000000"


def test_writes_openmetrics_and_labels(tmp_path: Path) -> None:
    out, labels = tmp_path / "sim.om", tmp_path / "labels.json"
    code = main(["simulate", "--seed", "3", "--jobs", "2", "--duration", "300", "--start", START,
                 "--classes", "IO,gpu", "--scrape-interval", "30", "--dcgm-fieldset", "dev",
                 "--out", str(out), "--labels", str(labels)])  # fmt: skip
    assert code == 0
    assert out.read_text().endswith("# EOF\n")
    truth = json.loads(labels.read_text())
    assert sorted(t["label"] for t in truth) == ["GPU", "IO"]
    assert all(t["params"]["env"]["dcgm_fieldset"] == "dev" for t in truth)
    assert all(t["pods"] and t["start"] >= 1.7e9 for t in truth)
    again = tmp_path / "again.om"
    main(["simulate", "--seed", "3", "--jobs", "2", "--duration", "300", "--start", START, "--classes", "IO,gpu",
          "--scrape-interval", "30", "--dcgm-fieldset", "dev", "--out", str(again)])  # fmt: skip
    assert again.read_text() == out.read_text()


def test_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--jobs", "1", "--duration", "120", "--scrape-interval", "60", "--out", "-"]) == 0
    assert capsys.readouterr().out.endswith("# EOF\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--classes", "Disk", "--out", "-"], "unknown class"),
        ([], "nothing to do"),
        (["--jobs", "0", "--out", "-"], "--jobs"),
        (["--out", "/nonexistent-dir/x.om"], "does not exist"),
        (["--duration", "30", "--out", "-"], "duration"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_holdout_and_ambiguous_flags(tmp_path: Path) -> None:
    labels = tmp_path / "labels.json"
    argv = ["simulate", "--seed", "1", "--jobs", "10", "--duration", "300", "--start", START, "--labels", str(labels)]
    assert main([*argv, "--holdout", "--ambiguous"]) == 0
    held = json.loads(labels.read_text())
    assert main(argv) == 0
    train = json.loads(labels.read_text())
    combo = lambda t: (t["params"]["gpu"], t["params"]["storage"], t["params"]["nic_gbps"])  # noqa: E731
    assert {combo(t) for t in held}.isdisjoint({combo(t) for t in train})
    assert not any(t["ambiguous"] for t in train)
