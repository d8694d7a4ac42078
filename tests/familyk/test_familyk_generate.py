"""Family K's windows are well formed, deterministic and balanced."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyk import FamilyKJob, generate_family_k

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyKJob]:
    return generate_family_k(11, 60, start=START, step=30.0)


def test_same_seed_same_jobs(jobs: list[FamilyKJob]) -> None:
    again = generate_family_k(11, 60, start=START, step=30.0)
    assert all(same_job(a, b) for a, b in zip(jobs, again, strict=True))


def test_other_seed_other_jobs(jobs: list[FamilyKJob]) -> None:
    other = generate_family_k(12, 60, start=START, step=30.0)
    assert not all(same_job(a, b) for a, b in zip(jobs, other, strict=True))


def test_classes_in_equal_numbers_and_shuffled(jobs: list[FamilyKJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert counts == {c: 12 for c in CLASSES}
    assert [j.label for j in jobs[:5]] != list(CLASSES)
    mechanisms = Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert mechanisms == {"host-memory-pressure": 6, "hbm-bandwidth": 6}


def test_windows_start_at_start_on_the_grid() -> None:
    for step in (15.0, 30.0, 60.0):
        for job in generate_family_k(5, 10, start=START + 7.0, step=step):
            w = job.window
            assert w.start == START + 7.0 == w.timestamps[0]
            assert np.allclose(np.diff(w.timestamps), step)
            assert w.end == w.timestamps[-1] and w.step == step
            assert 20 <= w.timestamps.size <= 120


def test_shapes_names_and_sizes(jobs: list[FamilyKJob]) -> None:
    for job in jobs:
        w = job.window
        assert 1 <= len(w.pods) <= 16
        assert len({p.pod for p in w.pods}) == len(w.pods)
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8
            assert pod.gpu_model
            assert set(pod.signals) <= set(SIGNALS)
            for values in pod.signals.values():
                assert values.shape == w.timestamps.shape
            assert "gpu_util" in pod.signals


def test_quality_is_what_the_window_holds(jobs: list[FamilyKJob]) -> None:
    for job in jobs:
        families, coverage = families_and_coverage(job.window.pods)
        assert job.window.quality.families == families
        assert job.window.quality.coverage == pytest.approx(coverage)
        assert job.window.quality.scrape_interval is not None
        assert 5.0 <= job.window.quality.scrape_interval <= 60.0


def test_variety_real_clusters_show(jobs: list[FamilyKJob]) -> None:
    tags = Counter(t for j in jobs for t in j.tags)
    assert {t for t in tags if t.startswith("dcgm:")} == {"dcgm:dev-only", "dcgm:default", "dcgm:full"}
    assert tags["strength:moderate"] >= 10 and tags["strength:strong"] >= 10
    assert len({t for t in tags if t.startswith("board:")}) >= 6
    assert len({t for t in tags if t.startswith("scrape:")}) >= 4
    assert any(t.startswith("restart:") for t in tags)
    assert tags["checkpoint-pauses"] > 0 and tags["neighbours"] > 0


def test_labels_do_not_leak_into_names(jobs: list[FamilyKJob]) -> None:
    for job in jobs:
        words = job.name.lower().split("-")
        assert job.label.value.lower() not in words
        assert job.mechanism not in job.name


def test_bad_arguments_are_refused() -> None:
    assert generate_family_k(1, 0, start=START) == []
    with pytest.raises(ValueError, match="step"):
        generate_family_k(1, 5, start=START, step=0.0)
    with pytest.raises(ValueError, match="n="):
        generate_family_k(1, -1, start=START)
