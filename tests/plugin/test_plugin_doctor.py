"""`kubectl bottleneck doctor`: the operator's monitoring check, with kubectl's exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _plugin_support import Run

from bottleneck_operator.cli import main as cli_main

pytestmark = pytest.mark.prometheus


def test_doctor_prints_what_the_operators_doctor_prints(
    sim_dataset: Any, run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["doctor", "--prometheus-url", sim_dataset.prom.url, "--at", str(sim_dataset.end)]
    operator_code = cli_main(argv)
    operator_out, _ = capsys.readouterr()
    code, out, err = run(*argv)
    assert out == operator_out and "FAMILY" in out
    assert code == (0 if operator_code == 0 else 1), err
    code, out, _ = run(*argv, "-o", "json")
    assert isinstance(json.loads(out)["findings"], list)


def test_doctor_on_an_unreachable_prometheus_exits_1(bad_server: Any, run: Run) -> None:
    code, out, err = run("doctor", "--prometheus-url", bad_server.refused_url, "--prometheus-timeout", "2")
    assert code == 1 and out == ""
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
