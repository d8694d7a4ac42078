"""`kubectl bottleneck summary`: the cluster's summary as text, -o json/yaml, --html, and kubectl's errors."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from _plugin_support import Reports, Run

from bottleneck_operator.analysis.cluster import summarise
from bottleneck_operator.reports.summary import status_from_summary
from bottleneck_operator_dev.demo.cluster import SUMMARIES
from bottleneck_operator_dev.simulation.cluster import draw_cluster


def _add_summary(reports: Reports, pattern: str = "bad-gpu") -> dict[str, object]:
    cluster = draw_cluster(5300, jobs=500, nodes=100, pattern=pattern)
    status = status_from_summary(summarise(cluster.jobs), now=1.8e9).dump()
    body = {
        "apiVersion": "bottleneck.dev/v1alpha1",
        "kind": "ClusterBottleneckSummary",
        "metadata": {"name": "cluster"},
    }
    reports.cluster.create(SUMMARIES, None, body)
    reports.cluster.patch(SUMMARIES, None, "cluster", {"status": status}, sub="status")
    return status


def test_summary_as_text(reports: Reports, run: Run) -> None:
    status = _add_summary(reports)
    code, out, err = run("summary")
    assert code == 0, err
    assert out.startswith("Cluster bottleneck summary\nJobs: 500")
    assert "What to fix first:" in out and "Stragglers:" in out and "Suspect nodes and GPUs:" in out
    suspect = status["suspects"][0]  # type: ignore[index]
    assert suspect["message"] in out  # the bad GPU, by node and index
    class_rows = [line.split() for line in out.split("\n\n")[1].splitlines()]
    assert class_rows[0] == ["CLASS", "JOBS", "GPU-HOURS", "LOST"]
    assert sum(int(r[1]) for r in class_rows[1:]) == 500
    assert "\x1b[" not in out


def test_summary_as_json_yaml_and_html(reports: Reports, run: Run, tmp_path: Path) -> None:
    _add_summary(reports, pattern="power-capped-rack")
    code, out, _ = run("summary", "-o", "json")
    assert code == 0 and json.loads(out)["status"]["hotSpots"][0]["dimension"] == "rack"
    page = tmp_path / "summary.html"
    code, out, err = run("summary", "-o", "yaml", "--html", str(page))
    assert code == 0 and yaml.safe_load(out)["kind"] == "ClusterBottleneckSummary"
    assert f"HTML summary written to {page}" in err
    text = page.read_text()
    assert "<h2>Hot spots</h2>" in text and "clock-throttled Jobs" in text and "<script" not in text


def test_no_summary_yet_is_kubectls_not_found(reports: Reports, run: Run) -> None:
    code, out, err = run("summary")
    assert code == 1 and out == ""
    assert err.startswith('Error from server (NotFound): clusterbottlenecksummaries.bottleneck.dev "cluster" not found')
    assert "Traceback" not in err
