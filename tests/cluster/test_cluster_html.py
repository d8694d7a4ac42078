"""The summary's HTML page: every section from the status, values escaped, missing fields left out."""

from __future__ import annotations

from pathlib import Path

from bottleneck_operator.analysis.cluster import summarise
from bottleneck_operator.html import render_summary_html, write_summary_html
from bottleneck_operator.reports.summary import status_from_summary
from bottleneck_operator_dev.simulation.cluster import draw_cluster


def test_the_page_has_every_section_of_a_full_summary(tmp_path: Path) -> None:
    cluster = draw_cluster(5400, jobs=600, nodes=100, pattern="slow-node-storage")
    status = status_from_summary(summarise(cluster.jobs), now=1.8e9).dump()
    path = tmp_path / "summary.html"
    write_summary_html(status, path)
    page = path.read_text()
    for section in ("Jobs by class", "GPU-hours lost by class", "What to fix first", "Stragglers",
                    "GPU-hours lost by namespace"):  # fmt: skip
        assert f"<h2>{section}</h2>" in page
    assert cluster.fault is not None and cluster.fault.location in page
    assert "<script" not in page and "default-src 'none'" in page


def test_values_are_escaped_and_missing_fields_left_out() -> None:
    status = {
        "jobs": 1,
        "byClass": {"IO": 1},
        "stragglers": [{"namespace": "<script>alert(1)</script>", "job": "j", "pod": "p&q", "share": 0.2}],
    }
    page = render_summary_html(status)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;/j" in page and "p&amp;q" in page
    assert "<h2>Hot spots</h2>" not in page and "<h2>What to fix first</h2>" not in page
    assert "<h1>Cluster bottleneck summary</h1>" in render_summary_html({})
