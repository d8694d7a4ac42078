"""`kubectl bottleneck show NAME`: the report in full, its timeline, kubectl's errors, colour only on a terminal."""

from __future__ import annotations

import json
import os
import select
import socket
import sys
from pathlib import Path

import pytest
import yaml
from _plugin_support import Reports, Run, io_status, unknown_status

from bottleneck_operator.plugin.show import _unit, sparkline, timeline_lines
from bottleneck_operator.reports.model import LagItem, StragglerItem


def test_show_prints_everything_the_report_holds(reports: Reports, run: Run) -> None:
    reports.add("ml", "train-io", io_status())
    code, out, err = run("show", "train-io", "-n", "ml")
    assert code == 0, err
    assert "Bottleneck:    IO  (confidence 87%, secondary CPU)" in out
    assert "I/O pressure held the node 42 % of the time.  [node_psi_io_some: 42% (reference 5%)]" in out
    assert "1. Cache the dataset on local NVMe or in the page cache  [node_psi_io_some]" in out
    # the bound alone, as the CRD's printer column and `list -o wide` give it: no low end is reported
    assert "headroom  2.40x  (GPU idle time waiting on reads)" in out
    assert "storage read: needs 900 MB/s, observed 310 MB/s: reads at 34 %" in out
    pods = [line.split() for line in out.splitlines() if line.startswith("  train-io-")]
    assert pods == [
        ["train-io-0", "node-a", "IO", "90%", "30%", "▃"],
        ["train-io-1", "node-b", "IO", "80%", "95%", "█"],
    ]
    assert "missing: sidecar" in out and "Model:         test-model" in out
    # ten windows, CPU-bound for the first three, then IO; confidence rising
    assert "  verdict      CCCIIIIIII" in out
    assert "  confidence   ▄▄▅▅▅▆▆▇▇▇" in out  # 0.40 .. 0.85 in eighths
    assert "  legend       I=IO  C=CPU" in out
    assert "\x1b[" not in out


def test_show_unknown_says_why(reports: Reports, run: Run) -> None:
    reports.add("default", "early", unknown_status())
    code, out, _ = run("show", "early")
    assert code == 0
    assert "Reason:        no GPU samples yet (NoPods)" in out
    assert "Timeline:      <none>" in out


def test_show_json_and_yaml_are_the_object(reports: Reports, run: Run) -> None:
    reports.add("ml", "train-io", io_status())
    code, out, _ = run("show", "train-io", "-n", "ml", "-o", "json")
    obj = json.loads(out)
    assert code == 0 and obj["kind"] == "BottleneckReport" and obj["status"] == io_status().dump()
    code, out, _ = run("show", "train-io", "-n", "ml", "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["status"]["pods"][1]["gpuActive"] == 0.95


def test_no_such_report_is_kubectls_not_found(reports: Reports, run: Run) -> None:
    code, out, err = run("show", "ghost", "-n", "ml")
    assert code == 1 and out == ""
    assert err.strip() == 'Error from server (NotFound): bottleneckreports.bottleneck.dev "ghost" not found'


def test_api_down_is_a_clear_error(tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: connections are refused
    from bottleneck_operator_dev.demo.cluster import kubeconfig_text

    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig_text(f"http://127.0.0.1:{port}"))
    for argv in (["show", "x", "--kubeconfig", str(path)], ["list", "-A", "--kubeconfig", str(path)]):
        code, out, err = run(*argv)
        assert code == 1 and out == ""
        assert err.startswith(f"Unable to connect to the server http://127.0.0.1:{port}: ")
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_kubeconfig_mistakes_are_one_line(tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run("list", "--kubeconfig", str(tmp_path / "missing"))
    assert code == 1 and "no such file" in err
    config = {
        "apiVersion": "v1",
        "clusters": [{"name": "c", "cluster": {"server": "https://example.invalid"}}],
        "users": [{"name": "u", "user": {"exec": {"command": "cloud-login"}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    code, _, err = run("list", "--kubeconfig", str(path))
    assert code == 1 and "exec" in err and "Traceback" not in err
    code, _, err = run("list", "--kubeconfig", str(path), "--context", "nope")
    assert code == 1 and err.strip() == 'error: context "nope" does not exist in the kubeconfig'
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none-here"))
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run("list")
    assert code == 1 and "no kubeconfig found" in err


def _drain(master: int) -> str:
    """All a terminal holds: one read of a pty returns what its line discipline passed on so far, not all written."""
    chunks = []
    while select.select([master], [], [], 0.5)[0]:
        chunks.append(os.read(master, 65536))
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_only(reports: Reports, monkeypatch: pytest.MonkeyPatch) -> None:
    from bottleneck_operator.plugin.main import main

    reports.add("ml", "train-io", io_status())
    master, slave = os.openpty()
    with os.fdopen(slave, "w", encoding="utf-8") as tty:
        monkeypatch.setattr(sys, "stdout", tty)
        assert main(["show", "train-io", "-n", "ml"]) == 0
        tty.flush()
        coloured = _drain(master)
        monkeypatch.setenv("NO_COLOR", "1")
        assert main(["show", "train-io", "-n", "ml"]) == 0
        tty.flush()
        plain = _drain(master)
    os.close(master)
    assert "\x1b[33mIO\x1b[0m" in coloured  # the class in its colour
    assert "\x1b[" not in plain and "Bottleneck:    IO" in plain


def test_sparklines_and_long_timelines() -> None:
    assert sparkline([0.0, 0.5, 0.99, 1.0, None]) == "▁▅██ "
    assert (
        _unit(2.16e10, "B/s") == "21.6 GB/s" and _unit(0.083, "ratio") == "8.3%" and _unit(3.5, "cores") == "3.5 cores"
    )
    entries = [
        {"start": f"t{i}", "end": f"t{i + 1}", "bottleneck": "GPU" if i < 100 else "Memory", "confidence": 0.5,
         "gpuActive": 1.0 if i < 100 else 0.0}
        for i in range(200)
    ]  # fmt: skip
    lines = timeline_lines({"timeline": entries}, colour=False, width=40)
    assert lines[1] == "  verdict      " + "G" * 20 + "M" * 20
    assert lines[3] == "  GPU active   " + "█" * 20 + "▁" * 20
    assert lines[4] == "  span         t0 .. t200"


def test_show_html_writes_the_page(reports: Reports, run: Run, tmp_path: Path) -> None:
    reports.add("ml", "train-io", io_status())
    page = tmp_path / "train-io.html"
    code, out, err = run("show", "train-io", "-n", "ml", "--html", str(page))
    assert code == 0, err
    assert f"HTML report written to {page}" in err and "Bottleneck:    IO" in out
    text = page.read_text()
    assert "ml/train-io" in text and "I/O pressure held the node 42 % of the time." in text
    code, _, err = run("show", "train-io", "-n", "ml", "--html", str(tmp_path / "no-dir" / "x.html"))
    assert code == 1 and err.startswith("error: --html: cannot write") and "Traceback" not in err


def test_the_real_executable_prints_one_line_not_a_traceback(tmp_path: Path) -> None:
    import subprocess

    from bottleneck_operator_dev.demo.cluster import kubeconfig_text

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig_text(f"http://127.0.0.1:{port}"))
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator.plugin.main", "show", "x", "--kubeconfig", str(path)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Unable to connect to the server") and len(proc.stderr.strip().splitlines()) == 1


def test_show_names_the_stragglers_with_their_evidence(reports: Reports, run: Run) -> None:
    lag = LagItem(signal="clock_rel_peak", observed=0.71, peers=0.98, score=-6.2)
    straggler = StragglerItem(
        namespace="ml", job="train-io", pod="train-io-1", node="node-b", gpu="3", cause="throttled-clock",
        share=0.12, evidence=[lag],
    )  # fmt: skip
    status = io_status().model_copy(update={"stragglers": [straggler]})
    reports.add("ml", "train-io", status)
    code, out, err = run("show", "train-io", "-n", "ml")
    assert code == 0, err
    assert "Stragglers (against the Job's own peers):" in out
    assert "  - train-io-1 on node-b GPU 3: throttled-clock, costs 12% of the Job's time" in out
    assert "      clock_rel_peak 0.71 against the peers' 0.98 (score -6.2)" in out
    # a report without stragglers says nothing of them
    reports.add("ml", "plain", io_status())
    assert "Stragglers" not in run("show", "plain", "-n", "ml")[1]
