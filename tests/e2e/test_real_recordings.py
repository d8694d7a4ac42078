"""Real recordings of real bottlenecks (tests/data/real-*/, made by ``make record``) get their class.

Each recording is OpenMetrics exported from the Prometheus that scraped a real node-exporter and a
real cgroup while a limited pipeline ran (recordings/README.md). Here every recording is moved in
time to end shortly before now, one after another with gaps longer than Prometheus's lookback (they
were all made on the same node, and their node-exporter series must not overlap), backfilled into
a real Prometheus with promtool, and analysed by the project's pipeline over the recorded Job window.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.contract.verdict import Verdict

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

DATA = Path(__file__).resolve().parent.parent / "data"
RECORDINGS = sorted(p.parent.name for p in DATA.glob("real-*/metrics.om"))
GAP = 900.0  # seconds between shifted recordings: beyond the 5 min lookback

# A recording the current model gets wrong stays as recorded; its assertion is an expected failure
# with what the model said and why (recordings/README.md, "What the model said").
KNOWN_WRONG: dict[str, str] = {}


@dataclass(frozen=True)
class Shifted:
    truth: dict[str, Any]
    start: float
    end: float


def _shift_lines(text: str, offset: float) -> dict[str, list[str]]:
    """Family header -> its sample lines with timestamps moved by ``offset`` seconds."""
    families: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("# TYPE"):
            current = families.setdefault(line, [])
        elif line and not line.startswith("#"):
            head, ts = line.rsplit(" ", 1)
            current.append(f"{head} {float(ts) + offset:.3f}")
    return families


def _merged_openmetrics(now: float) -> tuple[str, dict[str, Shifted]]:
    """All recordings as one OpenMetrics text (one block per family), and each one's shifted window."""
    families: dict[str, list[str]] = {}
    windows: dict[str, Shifted] = {}
    end = now - 120.0
    for name in RECORDINGS:
        truth = json.loads((DATA / name / "truth.json").read_text())
        # Whole seconds keep the recorded scrape phase; the grid of the analysis does not care.
        offset = float(round(end - truth["end"]))
        for header, lines in _shift_lines((DATA / name / "metrics.om").read_text(), offset).items():
            families.setdefault(header, []).extend(lines)
        windows[name] = Shifted(truth, truth["start"] + offset, truth["end"] + offset)
        end -= truth["end"] - truth["start"] + GAP
    body = [line for header, lines in families.items() for line in (header, *lines)]
    return "\n".join(body) + "\n# EOF\n", windows


@pytest.fixture(scope="module")
def verdicts(start_prometheus: Any) -> dict[str, tuple[Shifted, Verdict]]:
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings

    if not RECORDINGS:
        pytest.fail("no recordings under tests/data/real-*: run `make record` as root")
    text, windows = _merged_openmetrics(time.time())
    prom = start_prometheus(text)
    analyzer = Analyzer(Settings.model_validate({"prometheus_url": prom.url}))
    requests = [
        JobRequest(namespace=w.truth["namespace"], job=w.truth["job"], start=w.start, end=w.end)
        for w in windows.values()
    ]
    results = analyzer.analyze_jobs(requests, phase="Completed")
    return {name: (windows[name], r.verdict) for name, r in zip(windows, results, strict=True)}


def test_every_scenario_is_recorded() -> None:
    assert {"real-cpu", "real-io", "real-memory", "real-interconnect"} <= set(RECORDINGS)
    for name in RECORDINGS:
        assert (DATA / name / "metrics.om").stat().st_size < 400_000, f"{name} is too large to keep"


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[n])) if n in KNOWN_WRONG else n
     for n in RECORDINGS],
)  # fmt: skip
def test_recording_gets_its_class(name: str, verdicts: dict[str, tuple[Shifted, Verdict]]) -> None:
    window, verdict = verdicts[name]
    truth = window.truth
    assert verdict.abstention is None, f"{name}: abstained ({verdict.reason})"
    assert [p.pod for p in verdict.pods] == [truth["pod"]]
    probs = {k: round(v, 2) for k, v in verdict.probabilities.items()}
    assert verdict.bottleneck.value == truth["class"], f"{name}: got {verdict.bottleneck.value} {probs}"


def test_recordings_measured_their_limit() -> None:
    # The truth files carry the figures that make each class the right one; a re-recording that lost
    # its limit (no throttling, no swap, ...) fails here before it can teach the tests anything.
    figures = {n: json.loads((DATA / n / "truth.json").read_text())["measured"] for n in RECORDINGS}
    assert figures["real-cpu"]["cfs_throttled_fraction"] > 0.3
    assert figures["real-io"]["read_mb_per_s"] > 5 and figures["real-io"]["io_pressure_some_fraction"] > 0.3
    assert figures["real-memory"]["major_faults_per_s"] > 100 and figures["real-memory"]["swap_mb_at_end"] > 100
    assert figures["real-interconnect"]["wire_mb_per_s"] > 5
    for f in figures.values():
        assert f["virtual_gpu_busy"] < 0.6
