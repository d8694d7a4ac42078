"""`bottleneck-operator demo`, shortened: the whole loop ends with the reports table and exit 0."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def test_demo_end_to_end() -> None:
    from bottleneck_operator.simulation.localprom import binaries_available

    if not binaries_available():
        pytest.skip("Debian's prometheus/promtool are not installed (make test installs them)")
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator", "demo", "--duration", "15", "--interval", "5", "--jobs", "5"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("NAMESPACE")))
    assert lines[header].split() == [
        "NAMESPACE", "NAME", "JOB", "BOTTLENECK", "MECHANISM", "CONFIDENCE", "GPU", "PHASE", "AGE",
    ]  # fmt: skip
    table_end = lines.index("", header)
    rows = [line.split() for line in lines[header + 1 : table_end]]
    assert len(rows) == 10
    phases = {r[7] if len(r) == 9 else r[-2] for r in rows}
    assert "Completed" in phases and "Running" in phases
    classes = {r[3] for r in rows if len(r) == 9}
    assert classes - {"Unknown"}, proc.stdout
    mechanisms = {r[4] for r in rows if len(r) == 9 and r[3] != "Unknown"}
    assert mechanisms - {"<none>"}, proc.stdout
    details = [line for line in lines[header + 1 :] if line.startswith("  ")]
    assert len(details) == 10
    (summary,) = [line for line in lines if line.endswith("verdicts match the bottleneck the simulator built in.")]
    matched, _, total = summary.split()[:3]
    assert int(total) == 10 and int(matched) >= 8, proc.stdout
    assert "Traceback" not in proc.stderr
