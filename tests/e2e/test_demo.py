"""`bottleneck-operator demo` end to end: six Jobs, every verdict matches, the changing Job's timeline shows both classes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

COLUMNS = ["NAMESPACE", "NAME", "JOB", "BOTTLENECK", "MECHANISM", "CONFIDENCE", "GPU", "PHASE", "AGE"]  # -o wide


def _table(lines: list[str]) -> tuple[int, list[list[str]]]:
    header = lines.index(next(line for line in lines if line.startswith("NAMESPACE")))
    assert lines[header].split()[: len(COLUMNS)] == COLUMNS
    end = lines.index("", header)
    return header, [line.split() for line in lines[header + 1 : end]]


def test_demo_tells_the_story(tmp_path: Path) -> None:
    from bottleneck_operator_dev.simulation.localprom import binaries_available

    if not binaries_available():
        pytest.skip("Debian's prometheus/promtool are not installed (make test installs them)")
    html = tmp_path / "demo.html"
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator", "demo", "--html", str(html)],
        capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert "\x1b[" not in out  # not a terminal: plain lines, no redrawing
    header, rows = _table(lines)
    assert len(rows) == 6, out
    assert {r[7] for r in rows} == {"Completed", "Running"}, out
    assert all(r[4] != "<none>" for r in rows if r[3] != "Unknown"), out  # every verdict names its mechanism

    # Every verdict matches the class built in (the changing Job: the class it changed to).
    details = [line for line in lines[header:] if line.startswith("  ml/") and "simulated" in line]
    assert len(details) == 6, out
    assert "6 of 6 verdicts match the bottleneck the simulator built in." in lines, out
    assert all(": match;" in line for line in details), out
    assert "6 of 6 named mechanisms match the one the simulator built in." in lines, out
    built = sorted(line.split("simulated ")[1].split(":")[0] for line in details)
    assert built == sorted(["CPU", "GPU", "IO", "IO→GPU", "Interconnect", "Memory"])

    # The changing Job's report in full, its timeline IO first, then GPU.
    full = lines.index(next(line for line in lines if line.startswith("$ kubectl get bnr vit-") or "in full" in line))
    timeline = next(line for line in lines[full:] if line.startswith("Timeline"))
    strip = timeline.split()[1]
    assert strip.startswith("I") and set(strip) <= {"I", "G", "?"}, timeline
    assert "Evidence" in lines[full:] and "Try" in lines[full:]

    # The HTML report exists, and the next commands are printed.
    assert html.is_file() and html.stat().st_size > 10_000
    assert f"Open the HTML report:   {html}" in lines
    assert any(line.strip().startswith("helm install bottleneck-operator") for line in lines)
    assert any(line.strip().startswith("kubectl get bnr -A") for line in lines[full:])
