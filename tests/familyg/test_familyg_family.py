"""Family G as a data set: reproducible, balanced, well-formed windows of contract signals."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyg import generate_family_g
from bottleneck_operator_dev.familyg.family import build_job, class_plan

Drawn = Any  # (FamilyGJob, Design, raw scrapes), see conftest


def test_same_seed_same_family_and_other_seed_another(family_start: float) -> None:
    one = generate_family_g(11, 10, start=family_start)
    two = generate_family_g(11, 10, start=family_start)
    other = generate_family_g(12, 10, start=family_start)
    assert all(same_job(a, b) for a, b in zip(one, two, strict=True))
    assert not all(same_job(a, b) for a, b in zip(one, other, strict=True))


def test_a_job_depends_on_its_own_seed_only(family_start: float) -> None:
    first, _, _ = build_job(5, 3, Bottleneck.IO, "", start=family_start, step=30.0)
    again, _, _ = build_job(5, 3, Bottleneck.IO, "", start=family_start, step=30.0)
    neighbour, _, _ = build_job(5, 4, Bottleneck.IO, "", start=family_start, step=30.0)
    assert same_job(first, again)
    assert not same_job(first, neighbour)


@pytest.mark.parametrize("n", [50, 52])
def test_classes_come_in_equal_numbers_in_shuffled_order(n: int) -> None:
    plan = class_plan(3, n)
    counts = Counter(c for c, _ in plan)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) <= 1
    memory = Counter(m for c, m in plan if c is Bottleneck.MEMORY)
    assert set(memory) == {"hbm-bandwidth", "host-memory-pressure"}
    assert max(memory.values()) - min(memory.values()) <= 1
    round_robin = [CLASSES[i % len(CLASSES)] for i in range(n)]
    assert [c for c, _ in plan] != round_robin


def test_generated_labels_are_balanced(drawn: list[Drawn]) -> None:
    counts = Counter(job.label for job, _, _ in drawn)
    assert counts == {c: len(drawn) // len(CLASSES) for c in CLASSES}
    memory = Counter(job.mechanism for job, _, _ in drawn if job.label is Bottleneck.MEMORY)
    assert memory["hbm-bandwidth"] == memory["host-memory-pressure"]


def test_mechanisms_are_the_contracts_spellings(drawn: list[Drawn]) -> None:
    for job, _, _ in drawn:
        assert job.mechanism in {m.value for m in MECHANISMS[job.label]}


def test_windows_sit_on_the_grid_from_start(drawn: list[Drawn], family_start: float) -> None:
    for job, _, _ in drawn:
        w = job.window
        assert w.start == family_start == w.timestamps[0]
        assert 20 <= w.timestamps.size <= 120
        assert np.allclose(np.diff(w.timestamps), 30.0)
        assert w.end == w.timestamps[-1] and w.step == 30.0
        assert 1 <= len(w.pods) <= 16
        assert (w.namespace, w.job) == (job.namespace, job.name)
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8 and pod.node and pod.gpu_model
            for name, values in pod.signals.items():
                assert name in SIGNALS, name
                assert values.shape == w.timestamps.shape and values.dtype == np.float64


def test_quality_is_what_the_pods_carry(drawn: list[Drawn]) -> None:
    for job, design, _ in drawn:
        fams, coverage = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == fams and q.coverage == pytest.approx(coverage)
        assert q.scrape_interval == design.cluster.scrape and 5 <= q.scrape_interval <= 60
        assert Family.DCGM_DEV in fams and coverage > 0.5


def _values(drawn: list[Drawn], name: str) -> list[np.ndarray]:
    out = []
    for job, _, _ in drawn:
        for pod in job.window.pods:
            if name in pod.signals:
                v = pod.signals[name]
                out.append(v[np.isfinite(v)])
    return out


def test_units_are_in_range(drawn: list[Drawn]) -> None:
    for name, spec in SIGNALS.items():
        # rate() extrapolates a counter's increase to the range's edges, which can carry a busy-time
        # share a little past one across a jittered scrape; a gauge's share never passes it
        slack = 0.03 if spec.kind is Kind.COUNTER else 1e-9
        for v in _values(drawn, name):
            assert (v >= 0).all(), name
            if spec.unit == "ratio":
                assert (v <= 1.0 + slack).all(), name


def test_power_and_clocks_stay_within_the_board(drawn: list[Drawn]) -> None:
    for job, design, _ in drawn:
        board = design.cluster.board
        for pod in job.window.pods:
            s = pod.signals
            assert np.nanmax(s["power_w"]) <= design.cluster.power_limit_w <= board.tdp_w
            assert np.nanmax(s["sm_clock_mhz"]) <= board.max_clock
            if "power_limit_w" in s:
                assert np.nanmax(s["power_w"] - s["power_limit_w"]) <= 0


def test_counters_only_fall_where_their_source_restarted(drawn: list[Drawn]) -> None:
    resets = 0
    for _, _, raw in drawn:
        for scrapes in raw.values():
            assert np.all(np.diff(scrapes.times) > 0)
            for k, key in enumerate(scrapes.keys):
                if key not in scrapes.counters:
                    continue
                falls = np.nonzero(np.diff(scrapes.values[k], axis=-1) < 0)[-1] + 1
                assert set(falls.tolist()) <= set(scrapes.resets), key
            resets += len(scrapes.resets)
    assert resets > 0  # the family does carry restarts


def test_counter_signals_are_rates_read_as_prometheus_does(drawn: list[Drawn]) -> None:
    counters = {n for n, s in SIGNALS.items() if s.kind is Kind.COUNTER and not s.special}
    for _, _, raw in drawn:
        for scrapes in raw.values():
            assert {k for k in scrapes.keys if "#" not in k and k in counters} <= set(scrapes.counters)


def test_clusters_vary_as_real_ones_do(drawn: list[Drawn]) -> None:
    designs = [d for _, d, _ in drawn]
    assert {d.cluster.scrape for d in designs} >= {5.0, 15.0, 30.0, 60.0}
    assert {d.cluster.dcgm_fields for d in designs} == {"dev", "default", "full"}
    assert len({d.cluster.board.model for d in designs}) >= 6
    assert any(d.cluster.power_limit_w < d.cluster.board.tdp_w for d in designs)
    assert any(not d.cluster.sidecar for d in designs) and any(d.cluster.sidecar for d in designs)
    pods = [p for job, _, _ in drawn for p in job.window.pods]
    assert any(p.co_located_pods > 0 for p in pods)
    assert any("ib_tx_bps" in p.signals for p in pods) and any("sm_active" in p.signals for p in pods)
    assert any("gr_engine_active" not in p.signals for p in pods)
    assert any("borderline" in job.tags for job, _, _ in drawn)
    assert len({d.workload.name for d in designs}) >= 8


def test_bad_arguments_are_refused(family_start: float) -> None:
    with pytest.raises(ValueError, match="n >= 0"):
        generate_family_g(1, -1, start=family_start)
    with pytest.raises(ValueError, match="step > 0"):
        generate_family_g(1, 5, start=family_start, step=0)
    assert generate_family_g(1, 0, start=family_start) == []
