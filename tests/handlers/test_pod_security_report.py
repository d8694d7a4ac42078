"""A collector that Pod Security kept from the host cgroup mount: the report says what it does not see.

The Job goes through the webhook's admission (the same review the HTTPS endpoint answers) for a
``baseline`` namespace and a ``privileged`` one, is created on the emulated API server as admitted,
and the running operator writes their reports.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from operator_harness import fast_settings, reports, run_operator, wait_for
from test_upgrade_gap import _Analyzer

from bottleneck_operator.controller.jobs import no_host_cgroup_note
from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook import handlers
from bottleneck_operator.webhook.server import review
from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body

sys.path.insert(0, str(Path(__file__).parent.parent / "webhook"))
from _webhook_support import admission_review, apply, patch_of

NOW = time.time()


def _admitted(namespace: str, name: str) -> dict[str, Any]:
    """The Job as the API server stores it after the webhook's answer."""
    job = job_body(namespace, name, start=NOW - 600)
    handlers.configure(Settings().injection, levels={"base": "baseline", "open": "privileged"})
    answer = asyncio.run(review(admission_review(job, namespace=namespace)))
    return apply(job, patch_of(answer))


def test_the_report_names_what_a_collector_without_the_host_mount_misses(cluster: LocalCluster) -> None:
    base, open_ = _admitted("base", "cut"), _admitted("open", "whole")
    assert "volumes" not in base["spec"]["template"]["spec"]
    assert "volumes" in open_["spec"]["template"]["spec"]
    cluster.create(JOBS, "base", base)
    cluster.create(JOBS, "open", open_)
    with run_operator(fast_settings("http://127.0.0.1:9", webhook_enabled=True), analyzer_factory=_Analyzer):
        for ns, name in (("base", "cut"), ("open", "whole")):
            wait_for(
                f"a verdict on {name}",
                lambda ns=ns, name=name: (reports(cluster, ns).get(name) or {}).get("status", {}).get("bottleneck"),
            )
        cut, whole = reports(cluster, "base")["cut"], reports(cluster, "open")["whole"]
    assert no_host_cgroup_note("baseline") in cut["status"]["dataQuality"]["notes"]
    assert "host cgroup mount" not in " ".join(whole["status"]["dataQuality"].get("notes", []))
