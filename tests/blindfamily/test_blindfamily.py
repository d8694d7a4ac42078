"""The blind family's structure: determinism, balance, window shapes, signal names and ranges, gaps.

Structural only: nothing here runs the project's classifier on the family (it is an evaluation
set, and tuning against it would defeat its purpose).
"""

from __future__ import annotations

import re
import time
from collections import Counter

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.blindfamily import BlindJob, generate_blind_family
from bottleneck_operator_dev.blindfamily.stages import Stages, label_of, speedups

START = 1767225600.0
MODELS = {
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA A100-SXM4-40GB",
    "NVIDIA H100 80GB HBM3",
    "NVIDIA H100 PCIe",
    "Tesla V100-SXM2-32GB",
    "NVIDIA L4",
    "NVIDIA A10G",
    "Tesla T4",
}
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.fixture(scope="module")
def family() -> list[BlindJob]:
    return generate_blind_family(11, 200, start=START)


def _arrays(job: BlindJob) -> list[np.ndarray]:
    return [pw.signals[name] for pw in job.window.pods for name in sorted(pw.signals)]


def test_the_same_seed_gives_the_same_family() -> None:
    a = generate_blind_family(3, 25, start=START)
    b = generate_blind_family(3, 25, start=START)
    assert [(j.namespace, j.name, j.label, j.mechanism, j.tags) for j in a] == [
        (j.namespace, j.name, j.label, j.mechanism, j.tags) for j in b
    ]
    for x, y in zip(a, b, strict=True):
        assert all(np.array_equal(u, v, equal_nan=True) for u, v in zip(_arrays(x), _arrays(y), strict=True))


def test_another_seed_gives_another_family() -> None:
    a = generate_blind_family(3, 25, start=START)
    b = generate_blind_family(4, 25, start=START)
    assert [(j.name, j.mechanism) for j in a] != [(j.name, j.mechanism) for j in b]


def test_every_class_is_there_in_equal_numbers(family: list[BlindJob]) -> None:
    counts = Counter(j.label for j in family)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) <= 1
    assert Bottleneck.UNKNOWN not in counts


def test_each_class_comes_from_several_mechanisms(family: list[BlindJob]) -> None:
    mechanisms: dict[Bottleneck, set[str]] = {}
    for j in family:
        mechanisms.setdefault(j.label, set()).add(j.mechanism)
    assert all(len(m) >= 3 for m in mechanisms.values()), mechanisms


def test_jobs_are_named_like_kubernetes_objects(family: list[BlindJob]) -> None:
    assert len({(j.namespace, j.name) for j in family}) == len(family)
    for j in family:
        assert DNS_1123.match(j.namespace) and DNS_1123.match(j.name)
        assert j.window.namespace == j.namespace and j.window.job == j.name
        assert all(p.pod.startswith(f"{j.name}-") for p in j.window.pods)


def test_windows_are_on_their_grid(family: list[BlindJob]) -> None:
    for j in family:
        w = j.window
        assert w.timestamps.dtype == np.float64
        assert 20 <= w.timestamps.size <= 120
        assert w.start == START and w.step == 30.0
        assert w.timestamps[0] == w.start and w.timestamps[-1] == w.end
        assert np.allclose(np.diff(w.timestamps), w.step)
        assert 1 <= len(w.pods) <= 16


def test_pods_carry_one_sample_per_timestamp(family: list[BlindJob]) -> None:
    for j in family:
        n = j.window.timestamps.size
        for p in j.window.pods:
            assert p.gpu_model in MODELS and 1 <= p.gpu_count <= 8 and p.co_located_pods >= 0
            assert p.node
            for name, values in p.signals.items():
                assert values.dtype == np.float64 and values.shape == (n,), (j.name, name)


def test_signal_names_and_ranges_follow_the_catalogue(family: list[BlindJob]) -> None:
    for j in family:
        for p in j.window.pods:
            for name, values in p.signals.items():
                assert name in SIGNALS, name
                finite = values[np.isfinite(values)]
                assert (finite >= 0).all(), (j.name, name)
                if SIGNALS[name].unit == "ratio":
                    assert (finite <= 1).all(), (j.name, name)


def test_data_quality_describes_the_pods(family: list[BlindJob]) -> None:
    for j in family:
        families, coverage = families_and_coverage(j.window.pods)
        q = j.window.quality
        assert q.families == families and q.coverage == pytest.approx(coverage)
        assert 0.0 <= q.coverage <= 1.0
        assert q.scrape_interval is not None and 5.0 <= q.scrape_interval <= 60.0


def test_some_jobs_miss_families(family: list[BlindJob]) -> None:
    def lacking(f: Family) -> int:
        return sum(f not in j.window.quality.families for j in family)

    for f in (Family.SIDECAR, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.NODE_PSI, Family.CADVISOR_CFS):
        assert 0 < lacking(f) < len(family), f
    assert all(Family.DCGM_DEV in j.window.quality.families for j in family)


def test_some_jobs_have_gaps(family: list[BlindJob]) -> None:
    gaps = sum(
        any(np.isnan(v).any() for p in j.window.pods for k, v in p.signals.items() if k != "mem_limit_bytes")
        for j in family
    )
    assert 0 < gaps < len(family)


def test_some_jobs_carry_rdma_traffic(family: list[BlindJob]) -> None:
    def ib(j: BlindJob) -> float:
        rows = [p.signals["ib_rx_bps"] for p in j.window.pods if "ib_rx_bps" in p.signals]
        return float(np.nanmean(rows)) if rows else 0.0

    assert any(ib(j) > 1e9 for j in family)
    assert any(j.mechanism == "rdma-allreduce" and ib(j) > 1e9 for j in family)


def test_multi_pod_and_shared_node_jobs_exist(family: list[BlindJob]) -> None:
    assert any(len(j.window.pods) > 1 for j in family)
    assert any(p.co_located_pods > 0 for j in family for p in j.window.pods)
    assert any(len({p.node for p in j.window.pods}) < len(j.window.pods) for j in family)


def test_six_hundred_jobs_are_quick() -> None:
    began = time.perf_counter()
    jobs = generate_blind_family(7, 600, start=START)
    assert len(jobs) == 600
    assert time.perf_counter() - began < 30.0


def _stages(read: float = 0.0, cpu: float = 0.0, flop: float = 0.0, hbm: float = 0.0, comm: float = 0.0) -> Stages:
    return Stages(read=read, cpu=cpu, h2d=0.0, comm=comm, overlap=0.5, flop=flop, launch=0.0, hbm=hbm)


def test_the_label_is_the_stage_whose_removal_helps_most() -> None:
    assert label_of(_stages(read=1.0, cpu=0.3, flop=0.4, hbm=0.2)) is Bottleneck.IO
    assert label_of(_stages(read=0.3, cpu=0.2, flop=1.0, hbm=0.3)) is Bottleneck.GPU
    assert label_of(_stages(read=0.3, flop=0.3, hbm=1.0)) is Bottleneck.MEMORY
    assert speedups(_stages(read=1.0, flop=0.5))[Bottleneck.IO] == pytest.approx(2.0)


def test_near_ties_are_not_labelled() -> None:
    assert label_of(_stages(read=1.0, cpu=0.95, flop=0.3)) is None
    assert label_of(_stages(read=1.0, flop=0.95, hbm=0.2)) is None
