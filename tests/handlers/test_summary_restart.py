"""The ClusterBottleneckSummary outlives the operator: finished Jobs' digests are kept on their reports.

A finished Job is never analysed again, so a restarted operator (an upgrade, a new leader) would sum
only the Jobs it analysed since. Each final report carries its Job's digest in an annotation, and the
retention sweep of the next operator puts them back in its book. Real pipeline, real Prometheus, the
Kubernetes emulator.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for

from bottleneck_operator.analysis.cluster import JobDigest, PeerSample, find_stragglers
from bottleneck_operator.contract.names import DIGEST_ANNOTATION
from bottleneck_operator.controller.digest_mirror import MAX_PEERS, decode, encode
from bottleneck_operator_dev.demo.cluster import JOBS, SUMMARIES, LocalCluster, job_body


def _summary(cluster: LocalCluster) -> dict[str, Any]:
    return dict((cluster.get(SUMMARIES, None, "cluster") or {}).get("status") or {})


def _digests(cluster: LocalCluster) -> dict[str, str]:
    found = {}
    for name, r in reports(cluster).items():
        text = ((r.get("metadata") or {}).get("annotations") or {}).get(DIGEST_ANNOTATION)
        if text:
            found[name] = text
    return found


def test_a_digest_survives_its_annotation() -> None:
    d = JobDigest(
        "ml", "train", "IO", gpus=8, seconds=3600.0, gpu_active=0.41, kind="PyTorchJob", workload="train",
        locations={"node": ("gpu-1", "gpu-2"), "storage": ("nfs",)}, action="Cache the dataset", headroom=1.0, end=1.7e9,
    )  # fmt: skip
    assert decode(encode(d)) == d
    for bad in (None, 3, "", "{", '{"name": "x"}', '{"namespace": "a", "name": "b", "bottleneck": "IO", "gpus": "x"}'):
        assert decode(bad) is None


def _peers(n_pods: int, slow: int) -> tuple[PeerSample, ...]:
    """Eight GPUs a pod; GPU 3 of pod ``slow`` holds a low clock with slowdown reasons."""
    return tuple(
        PeerSample(
            f"w-{p}", f"node-{p}", str(g), activity=0.61 if (p, g) == (slow, 3) else 0.9 + 0.001 * g,
            clock_mhz=1290.0 if (p, g) == (slow, 3) else 1980.0 - g, slowdown=0.8 if (p, g) == (slow, 3) else 0.0,
            net_bps=1.25e9 / 3, read_bps=None, io_wait=0.01,
        )
        for p in range(n_pods)
        for g in range(8)
    )  # fmt: skip


def test_a_digest_keeps_the_peers_its_stragglers_are_found_in() -> None:
    d = JobDigest("ml", "llm", "GPU", gpus=32, seconds=7200.0, peers=_peers(4, slow=2), end=1.7e9)
    back = decode(encode(d))
    assert back is not None and len(back.peers) == 32
    # Four significant digits: what the straggler test reads is unchanged.
    assert back.peers[0].net_bps == pytest.approx(1.25e9 / 3, rel=1e-3) and back.peers[0].read_bps is None
    before, after = find_stragglers(d), find_stragglers(back)
    assert [(s.pod, s.gpu, s.cause) for s in after] == [(s.pod, s.gpu, s.cause) for s in before] != []
    assert before[0].pod == "w-2" and before[0].gpu == "3"
    # A Job too wide to keep its peers keeps the rest of its digest.
    wide = JobDigest("ml", "wide", "GPU", gpus=8 * 40, peers=_peers(MAX_PEERS // 8 + 1, slow=0))
    kept = decode(encode(wide))
    assert kept is not None and kept.peers == () and kept.gpus == 8 * 40
    for bad in ([["w-0"]], [[3, None, None, 1, 1, 1, 1, 1, 1]], [["w-0", None, None, "x", 1, 1, 1, 1, 1]], "w-0"):
        body = json.loads(encode(d))
        assert decode(json.dumps({**body, "peers": bad})) is None


@pytest.mark.prometheus
@pytest.mark.slow
def test_a_restarted_operator_still_sums_the_finished_jobs(cluster: LocalCluster, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs[:4]
    end = max(j.end for j in jobs)
    settings = fast_settings(sim_dataset.prom.url, window=900.0)
    for j in jobs:
        cluster.create(JOBS, j.namespace, job_body(j.namespace, j.name, start=j.start, end=j.end))

    def final() -> bool:
        found = reports(cluster)
        return len(found) == len(jobs) and all(
            (r.get("status") or {}).get("phase") == "Completed" for r in found.values()
        )

    with run_operator(settings, clock=lambda: end + 60):
        wait_for("every report final", final, 90)
        wait_for("every finished Job's digest on its report", lambda: len(_digests(cluster)) == len(jobs), 30)
        wait_for("the summary of every Job", lambda: _summary(cluster).get("jobs") == len(jobs), 30)
    before = _summary(cluster)
    for name, text in _digests(cluster).items():
        digest = decode(text)
        assert (
            digest is not None
            and digest.name == name
            and digest.bottleneck == reports(cluster)[name]["status"]["bottleneck"]
        )

    cluster.delete(SUMMARIES, None, "cluster")  # the new operator must rebuild it, not find it
    with run_operator(settings, clock=lambda: end + 120):
        wait_for("the summary rebuilt with the finished Jobs", lambda: _summary(cluster).get("jobs") == len(jobs), 60)
    after = _summary(cluster)
    assert after["byClass"] == before["byClass"]
    assert after["gpuHoursLost"] == pytest.approx(before["gpuHoursLost"], rel=1e-6)
    assert after.get("stragglersTotal") == before.get("stragglersTotal")
