"""Pod Security: the webhook injects only what the namespace's enforced level admits, and says so.

Every level is served over HTTPS by the real endpoint, with the namespaces' labels given the way
the operator's namespace watch records them ("" for an unlabelled namespace).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes_validate
import pytest
from _webhook_support import Endpoint, apply, make_job, patch_of

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook import inject as inject_module
from bottleneck_operator.webhook.inject import CGROUP_VOLUME, CONTAINER_NAME, collector_container
from bottleneck_operator.webhook.podsecurity import admitted, enforce_level, restricted_violations
from bottleneck_operator.webhook.server import serve_admission

PROFILED = {"bottleneck.dev/profile": "true"}
LEVELS = {"open": "privileged", "base": "baseline", "tight": "restricted", "plain": ""}
INVALID = ["no", "0", "off", "yes", "False"]


@pytest.fixture
async def served(tls_pair: tuple[Path, Path]) -> AsyncIterator[tuple[Endpoint, list[tuple[Any, ...]]]]:
    cert, key = tls_pair
    events: list[tuple[Any, ...]] = []

    def post(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
        events.append((body["kind"], body["metadata"]["name"], type_, reason, message))

    async with serve_admission(Settings().injection, certfile=cert, keyfile=key, levels=LEVELS, post=post) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            yield Endpoint(url=url, ssl=ctx, session=session), events


async def _admit(endpoint: Endpoint, namespace: str, name: str) -> dict[str, Any]:
    job = make_job(PROFILED, name=name, namespace=namespace)
    return apply(job, patch_of(await endpoint.review(job, namespace=namespace)))


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = job["spec"]["template"]["spec"]
    return pod


def _collectors(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in _pod(job).get("initContainers", []) if c["name"] == CONTAINER_NAME]


async def test_a_privileged_namespace_gets_the_host_mount(served: tuple[Endpoint, list[Any]]) -> None:
    endpoint, events = served
    job = await _admit(endpoint, "open", "train-open")
    assert [v["name"] for v in _pod(job)["volumes"]] == [CGROUP_VOLUME]
    assert any(m["name"] == CGROUP_VOLUME for m in _collectors(job)[0]["volumeMounts"])
    assert "bottleneck.dev/collector-no-host-cgroup" not in job["metadata"].get("annotations", {})
    assert events == []


@pytest.mark.parametrize(("default", "mounted"), [("baseline", False), ("restricted", False), ("privileged", True)])
async def test_an_unlabelled_namespace_takes_the_cluster_default(
    tls_pair: tuple[Path, Path], default: str, mounted: bool
) -> None:
    cert, key = tls_pair
    settings = Settings(pod_security_default_level=default).injection
    async with serve_admission(settings, certfile=cert, keyfile=key, levels=LEVELS) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            job = await _admit(Endpoint(url=url, ssl=ctx, session=session), "plain", "train-plain")
    assert len(_collectors(job)) == 1
    assert ("volumes" in _pod(job)) is mounted
    # Where the mount is cut, the Job says which level cut it: its report carries it from there.
    said = job["metadata"]["annotations"].get("bottleneck.dev/collector-no-host-cgroup")
    assert said == (None if mounted else default)


@pytest.mark.parametrize("namespace", ["base", "tight"])
async def test_baseline_and_restricted_get_the_collector_without_hostpath(
    served: tuple[Endpoint, list[Any]], namespace: str
) -> None:
    endpoint, events = served
    job = await _admit(endpoint, namespace, f"train-{namespace}")
    (collector,) = _collectors(job)
    assert "volumes" not in _pod(job) and "volumeMounts" not in collector
    assert "--cgroup-root" not in collector["args"]
    assert not any("hostPath" in v for v in _pod(job).get("volumes", []))
    # The restricted profile's container rules hold for the container as injected.
    assert restricted_violations(collector) == []
    kubernetes_validate.validate(job, "1.29", strict=True)
    assert job["metadata"]["annotations"]["bottleneck.dev/collector-no-host-cgroup"] == LEVELS[namespace]
    assert [(e[0], e[1], e[2], e[3]) for e in events] == [
        ("Job", f"train-{namespace}", "Warning", "CollectorRestricted")
    ]
    assert (
        "hostPath" in events[0][4]
        and enforce_level({"pod-security.kubernetes.io/enforce": LEVELS[namespace]}) in events[0][4]
    )


async def test_unknown_namespace_is_taken_as_baseline(served: tuple[Endpoint, list[Any]]) -> None:
    endpoint, events = served
    job = await _admit(endpoint, "unseen", "train-unseen")
    assert _collectors(job) and "volumes" not in _pod(job)
    assert "not known yet" in events[0][4]
    # Said once per namespace, not on every Job there; a known level is said on every Job.
    await _admit(endpoint, "unseen", "train-unseen-2")
    await _admit(endpoint, "base", "train-base-1")
    await _admit(endpoint, "base", "train-base-2")
    assert [e[1] for e in events] == ["train-unseen", "train-base-1", "train-base-2"]


async def test_restricted_gets_no_collector_when_the_container_cannot_meet_it(
    served: tuple[Endpoint, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, events = served
    original = inject_module.collector_container

    def as_root(settings: Settings, **kw: Any) -> dict[str, Any]:
        container = original(settings, **kw)
        container["securityContext"] = {**container["securityContext"], "runAsNonRoot": False, "runAsUser": 0}
        return container

    monkeypatch.setattr(inject_module, "collector_container", as_root)
    job = await _admit(endpoint, "tight", "train-root")
    assert _collectors(job) == []
    # Marked as skipped on purpose, so the report does not blame a webhook outage.
    assert job["spec"]["template"]["metadata"]["annotations"]["bottleneck.dev/collector-skipped"] == "pod-security"
    assert "no collector injected" in events[0][4] and "runAsNonRoot" in events[0][4]
    # Under baseline the same container still goes in (baseline has no such rule).
    job = await _admit(endpoint, "base", "train-root-base")
    assert len(_collectors(job)) == 1


def test_levels_and_the_restricted_rules() -> None:
    assert enforce_level(None) == "baseline"  # the chart's podSecurity.defaultLevel
    assert enforce_level({}, "privileged") == "privileged"
    assert enforce_level({"pod-security.kubernetes.io/enforce": "privileged"}, "restricted") == "privileged"
    assert enforce_level({"pod-security.kubernetes.io/enforce": "Baseline "}) == "baseline"
    assert enforce_level({"pod-security.kubernetes.io/enforce": "bogus"}) == "restricted"
    good = collector_container(Settings().injection, host_cgroup=False, processes=True)
    assert restricted_violations(good) == []
    assert admitted("privileged", host_cgroup=True, container=good).host_cgroup is True
    assert admitted("baseline", host_cgroup=False, container=good).note is None  # nothing was cut
    bad = {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}, "privileged": True}}
    assert set(restricted_violations(bad)) == {
        "runAsNonRoot",
        "allowPrivilegeEscalation=false",
        "privileged",
        "capabilities drop ALL",
        "capabilities add",
        "seccompProfile RuntimeDefault",
    }
    assert admitted("restricted", host_cgroup=True, container=bad).collector is False


@pytest.mark.parametrize("value", INVALID)
async def test_a_sloppy_switch_gets_a_warning_and_the_safe_choice(
    served: tuple[Endpoint, list[Any]], value: str
) -> None:
    endpoint, events = served
    job = make_job({**PROFILED, "bottleneck.dev/sidecar": value}, name="train-sloppy", namespace="open")
    assert patch_of(await endpoint.review(job, namespace="open")) == []  # no collector at all
    job = make_job({**PROFILED, "bottleneck.dev/sidecar-host-cgroup": value}, name="train-mount", namespace="open")
    admitted_job = apply(job, patch_of(await endpoint.review(job, namespace="open")))
    assert len(_collectors(admitted_job)) == 1 and "volumes" not in _pod(admitted_job)  # no mount
    warnings = [e for e in events if e[3] == "InvalidAnnotation"]
    assert [(e[1], e[2]) for e in warnings] == [("train-sloppy", "Warning"), ("train-mount", "Warning")]
    assert f'bottleneck.dev/sidecar="{value}"' in warnings[0][4]
    assert f'bottleneck.dev/sidecar-host-cgroup="{value}"' in warnings[1][4]
