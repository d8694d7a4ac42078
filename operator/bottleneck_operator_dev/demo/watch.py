"""The demo's wait: complete Jobs on cue, show progress, stop once every report tells its part of the story."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from bottleneck_operator.reports import BottleneckReport, as_report
from bottleneck_operator_dev.demo.cluster import JOBS, REPORTS, LocalCluster, job_status
from bottleneck_operator_dev.demo.progress import Progress
from bottleneck_operator_dev.demo.story import DemoJob

TICK = 0.5  # seconds between looks at the reports
# Windows of the new class the changing Job's timeline shows before the demo ends.
AFTER_CHANGE = 2


def story_told(jobs: Sequence[DemoJob], reports: Sequence[BottleneckReport | Mapping[str, Any]]) -> bool:
    """Whether every Job's report shows what was built in.

    A steady Job: a verdict (any class: a miss is shown as one, not waited out), finalised if it
    completed. The changing Job: its timeline has the first class, then the last for a few windows.
    """
    statuses = {r.key: r.status for r in map(as_report, reports)}
    for j in jobs:
        s = statuses.get(j.key)
        if s is None or s.bottleneck in (None, "Unknown"):
            return False
        if j.completes_at is not None and s.phase != "Completed":
            return False
        if j.changes:
            seen = [e.bottleneck for e in s.timeline or []]
            if j.classes[0] not in seen or seen[-AFTER_CHANGE:] != [j.classes[-1]] * AFTER_CHANGE:
                return False
    return True


def watch(cluster: LocalCluster, jobs: Sequence[DemoJob], progress: Progress, limit: float) -> list[dict[str, Any]]:
    """Drive the Jobs and show progress until the story is told or ``limit`` seconds have passed.

    Returns:
        The reports at the end.
    """
    t0 = time.monotonic()
    pending = sorted((j for j in jobs if j.completes_at is not None), key=lambda j: j.completes_at or 0.0)
    reports: list[dict[str, Any]] = []
    while (elapsed := time.monotonic() - t0) < limit:
        while pending and (pending[0].completes_at or 0.0) <= elapsed:
            j = pending.pop(0)
            ns, name = j.key.split("/")
            cluster.patch(JOBS, ns, name, {"status": job_status(start=j.first.start, end=time.time())}, sub="status")
            progress.note(elapsed, f"Job {j.key} ({j.truth}) completed: its report is finalised over the whole run")
        reports = cluster.list(REPORTS)
        typed = [as_report(r) for r in reports]
        progress.update(elapsed, typed)
        if not pending and story_told(jobs, typed):
            break
        time.sleep(TICK)
    progress.finish()
    return reports
