"""The summary: Jobs by class, GPU-hours lost by class and namespace, actions by what they recover."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.cluster import ClusterBook, JobDigest, summarise
from bottleneck_operator.analysis.cluster.summary import TOP_ACTIONS, recoverable, workload_of

CACHE = "Cache the dataset on local NVMe"
WORKERS = "Give the data loader more workers"


def _job(name: str, cls: str, *, ns: str = "ml", gpus: int = 8, hours: float = 2.0, active: float | None = 0.5,
         action: str | None = None, headroom: float | None = None, end: float = 1000.0) -> JobDigest:  # fmt: skip
    return JobDigest(namespace=ns, name=name, bottleneck=cls, gpus=gpus, seconds=hours * 3600, gpu_active=active,
                     action=action, headroom=headroom, end=end)  # fmt: skip


def test_jobs_by_class_and_gpu_hours_lost_by_class_and_namespace() -> None:
    jobs = [
        _job("a", "IO", active=0.25),  # 8 GPUs x 2 h x 0.75 idle = 12
        _job("b", "IO", ns="vision", gpus=2, active=0.5),  # 2 x 2 x 0.5 = 2
        _job("c", "CPU", ns="vision", gpus=4, hours=1.0, active=0.6),  # 4 x 1 x 0.4 = 1.6
        _job("d", "GPU", active=1.2),  # over 1: never negative
        _job("e", "Unknown", active=None),  # unmeasured: not charged
    ]
    s = summarise(jobs)
    assert s.jobs == 5 and s.by_class == {"CPU": 1, "GPU": 1, "IO": 2, "Unknown": 1}
    assert s.lost_by_class == {"CPU": 1.6, "GPU": 0.0, "IO": 14.0, "Unknown": 0.0}
    assert s.gpu_hours == pytest.approx(16 + 4 + 4 + 16 + 16)
    assert s.gpu_hours_lost == pytest.approx(15.6)
    assert [(x.namespace, x.bottleneck, x.gpu_hours) for x in s.lost_by_namespace] == [
        ("ml", "IO", 12.0),
        ("vision", "IO", 2.0),
        ("vision", "CPU", 1.6),
    ]
    assert s.jobs_by_namespace[("vision", "IO")] == 1


def test_actions_are_ranked_by_the_gpu_hours_they_recover() -> None:
    jobs = [
        _job("a", "IO", active=0.25, action=CACHE, headroom=2.0),  # min(12 idle, 16 x 1/2) = 8
        _job("b", "IO", active=0.5, action=CACHE, headroom=4.0),  # min(8 idle, 16 x 3/4) = 8
        _job("c", "CPU", gpus=4, active=0.2, action=WORKERS, headroom=5.0),  # min(6.4, 8 x 0.8) = 6.4
        _job("d", "CPU", action=WORKERS, headroom=None),  # no estimate: recovers nothing
        _job("e", "GPU", action="Use mixed precision", headroom=1.5),  # the healthy class: not a fix
    ]
    s = summarise(jobs)
    assert [(a.action, a.jobs, a.gpu_hours) for a in s.actions] == [(CACHE, 2, 16.0), (WORKERS, 2, 6.4)]
    assert recoverable(jobs[3]) == 0.0


def test_every_list_is_bounded() -> None:
    jobs = [_job(f"j{i}", "IO", ns=f"ns{i}", action=f"action {i}", headroom=2.0) for i in range(80)]
    s = summarise(jobs)
    assert len(s.actions) == TOP_ACTIONS and len(s.lost_by_namespace) == 50


def test_the_book_keeps_each_jobs_latest_digest_within_the_lookback() -> None:
    book = ClusterBook(lookback=100.0)
    book.record([_job("a", "Unknown", end=50.0), _job("b", "IO", end=10.0)])
    book.record([_job("a", "IO", end=150.0)])
    assert len(book) == 2
    assert [(d.name, d.bottleneck) for d in book.digests(now=160.0)] == [("a", "IO")]  # b ended too long ago
    assert len(book) == 1


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("resnet-train-20260128", "resnet-train"),
        ("resnet-train-7f9c2", "resnet-train"),
        ("resnet-train", "resnet-train"),
        ("llm-sft-run-3-ab12x", "llm-sft-run"),
        ("bert", "bert"),
    ],
)
def test_runs_of_one_workload_share_a_stratum(name: str, stem: str) -> None:
    assert workload_of("ml", "PyTorchJob", name) == f"ml/PyTorchJob/{stem}"
