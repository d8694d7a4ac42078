"""``reports.read_summary``: the ClusterBottleneckSummary as the API server stores it, read back typed.

The object is created and its status patched through the Kubernetes API emulator, as the operator
writes it, from a summary of simulated Jobs; the keys read are the ones the API returns.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from bottleneck_operator.analysis.cluster import summarise
from bottleneck_operator.html import render_summary_html
from bottleneck_operator.plugin.summary import describe_summary
from bottleneck_operator.reports import ClusterBottleneckSummary, as_summary_status, read_summary
from bottleneck_operator.reports.summary import SummaryStatus, status_from_summary
from bottleneck_operator_dev.demo.cluster import SUMMARIES, LocalCluster
from bottleneck_operator_dev.simulation.cluster import draw_cluster

NOW = 1.8e9  # an explicit time: the summary's window and update time come from it


@pytest.fixture(scope="module")
def written() -> SummaryStatus:
    cluster = draw_cluster(5300, jobs=300, nodes=60, pattern="bad-gpu")
    return status_from_summary(summarise(cluster.jobs), now=NOW)


@pytest.fixture()
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        yield c


def _stored(cluster: LocalCluster, status: SummaryStatus | None) -> dict[str, Any]:
    body = {
        "apiVersion": "bottleneck.dev/v1alpha1",
        "kind": "ClusterBottleneckSummary",
        "metadata": {"name": "cluster"},
        "spec": {"lookbackSeconds": 3600.0},
    }
    cluster.create(SUMMARIES, None, body)
    if status is not None:
        cluster.patch(SUMMARIES, None, "cluster", {"status": status.dump()}, sub="status")
    got = cluster.get(SUMMARIES, None, "cluster")
    assert got is not None
    return got


def test_a_written_summary_reads_back_typed(cluster: LocalCluster, written: SummaryStatus) -> None:
    raw = _stored(cluster, written)

    summary = read_summary(raw)

    assert summary.written and summary.status == written
    assert summary.name == "cluster" and summary.metadata.uid and summary.metadata.resource_version
    assert summary.spec is not None and summary.spec.lookback_seconds == 3600.0
    assert summary.status.suspects and summary.status.suspects[0].message == written.suspects[0].message
    assert summary.raw is raw and read_summary(raw, drop_invalid=True) == summary


def test_a_summary_never_written_has_an_empty_status(cluster: LocalCluster) -> None:
    summary = read_summary(_stored(cluster, None))

    assert not summary.written and summary.status == SummaryStatus()
    assert describe_summary(summary) == "The summary is empty: the operator has not finished a pass yet."


def test_a_newer_operators_fields_are_left_out_at_every_level(cluster: LocalCluster, written: SummaryStatus) -> None:
    stored = _stored(cluster, written)
    newer = copy.deepcopy(stored)
    newer["spec"]["region"] = "east"
    newer["status"]["energyLost"] = {"joules": 1.0}
    newer["status"]["suspects"][0]["temperature"] = 91
    newer["status"]["window"]["timezone"] = "UTC"

    summary = read_summary(newer)

    assert summary.status == read_summary(stored).status and summary.spec == read_summary(stored).spec
    assert summary.raw["status"]["energyLost"] == {"joules": 1.0}


def test_a_refused_value_raises_unless_dropped(cluster: LocalCluster, written: SummaryStatus) -> None:
    stored = _stored(cluster, written)
    odd = copy.deepcopy(stored)
    odd["status"]["jobs"] = "many"
    odd["status"]["byClass"]["Disk"] = "three"
    odd["status"]["suspects"].append("not an object")

    with pytest.raises(ValueError, match="jobs"):
        read_summary(odd)
    summary = read_summary(odd, drop_invalid=True)

    # Each refused value is left out where it stands; everything beside it is still there.
    assert summary.status.jobs == 0 and summary.status.by_class == written.by_class
    assert summary.status.suspects == written.suspects
    assert summary.status.gpu_hours_lost == written.gpu_hours_lost and summary.status.hot_spots == written.hot_spots


def test_an_item_an_older_operator_wrote_without_a_field_is_still_shown(written: SummaryStatus) -> None:
    raw = copy.deepcopy(written.dump())
    assert raw["stragglers"], "the bad GPU makes stragglers"
    del raw["stragglers"][0]["evidence"]
    del raw["stragglers"][0]["cause"]

    with pytest.raises(ValueError, match="evidence"):
        read_summary({"status": raw})
    status = as_summary_status(raw)

    first = status.stragglers[0]
    assert (first.pod, first.evidence, first.cause) == (written.stragglers[0].pod, [], "")
    assert status.stragglers[1:] == written.stragglers[1:]


def test_an_unreadable_spec_reads_as_none_and_the_status_still_shows(
    cluster: LocalCluster, written: SummaryStatus
) -> None:
    broken = copy.deepcopy(_stored(cluster, written))
    broken["spec"]["lookbackSeconds"] = "a week"

    summary = read_summary(broken)

    assert summary.spec is None and summary.status == written


def test_typed_and_api_forms_show_the_same(written: SummaryStatus) -> None:
    summary = read_summary({"metadata": {"name": "cluster"}, "status": written.dump()})

    assert isinstance(summary, ClusterBottleneckSummary) and as_summary_status(written) is written
    assert as_summary_status(written.dump()) == written == summary.status
    assert render_summary_html(written) == render_summary_html(written.dump())
