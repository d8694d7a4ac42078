"""The pure injection logic: every branch that changes what is added, or whether anything is."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import kopf
import kubernetes_validate
from _webhook_support import make_job

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.inject import CGROUP_VOLUME, CONTAINER_NAME, inject, plan_injection
from bottleneck_operator.webhook.server import configure_admission

PROFILED = {"bottleneck.dev/profile": "true"}


def _sidecar(job: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in job["spec"]["template"]["spec"]["initContainers"] if c["name"] == CONTAINER_NAME)


def test_plan_is_the_difference_between_the_job_and_its_injected_form() -> None:
    job = make_job(PROFILED)
    before = copy.deepcopy(job)
    ops = plan_injection(job, Settings().injection)
    assert job == before  # the input is not mutated
    assert jsonpatch.apply_patch(job, ops) == inject(job, Settings().injection)


def test_resources_image_port_and_period_come_from_settings() -> None:
    settings = Settings(
        sidecar_image="registry.example/bn:9",
        sidecar_port=9200,
        sidecar_period=2.5,
        sidecar_cpu_request="5m",
        sidecar_cpu_limit="20m",
        sidecar_memory_request="24Mi",
        sidecar_memory_limit="48Mi",
    )
    mutated = inject(make_job(PROFILED), settings.injection)
    assert mutated is not None
    sidecar = _sidecar(mutated)
    assert sidecar["image"] == "registry.example/bn:9"
    assert sidecar["args"][:5] == ["sidecar", "--port", "9200", "--period", "2.5"]
    assert sidecar["ports"][0]["containerPort"] == 9200
    assert sidecar["resources"] == {
        "requests": {"cpu": "5m", "memory": "24Mi"},
        "limits": {"cpu": "20m", "memory": "48Mi"},
    }


def test_host_cgroup_can_be_turned_off_per_job_and_per_operator() -> None:
    per_job = inject(make_job({**PROFILED, "bottleneck.dev/sidecar-host-cgroup": "false"}), Settings().injection)
    per_operator = inject(make_job(PROFILED), Settings(sidecar_mount_host_cgroup=False).injection)
    for mutated in (per_job, per_operator):
        assert mutated is not None
        pod = mutated["spec"]["template"]["spec"]
        assert "volumes" not in pod
        assert "volumeMounts" not in _sidecar(mutated)
        assert "--cgroup-root" not in _sidecar(mutated)["args"]
        kubernetes_validate.validate(mutated, "1.29", strict=True)


def test_existing_volume_with_our_name_turns_the_mount_off() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["volumes"] = [{"name": CGROUP_VOLUME, "emptyDir": {}}]
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    assert mutated["spec"]["template"]["spec"]["volumes"] == [{"name": CGROUP_VOLUME, "emptyDir": {}}]
    assert "volumeMounts" not in _sidecar(mutated)


def test_an_explicit_share_process_namespace_false_is_respected() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["shareProcessNamespace"] = False
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    assert mutated["spec"]["template"]["spec"]["shareProcessNamespace"] is False


def test_host_pid_pods_get_no_shared_namespace_and_no_process_reading() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["hostPID"] = True
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    assert "shareProcessNamespace" not in mutated["spec"]["template"]["spec"]  # invalid together with hostPID
    assert "--no-processes" in _sidecar(mutated)["args"]
    kubernetes_validate.validate(mutated, "1.29", strict=True)


def test_host_network_pods_get_no_network_count() -> None:
    """On the node's network namespace the collector would count every pod's bytes as the pod's own."""
    job = make_job(PROFILED)
    assert "--no-network" not in _sidecar(inject(job, Settings().injection))["args"]
    job["spec"]["template"]["spec"]["hostNetwork"] = True
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    assert "--no-network" in _sidecar(mutated)["args"]
    kubernetes_validate.validate(mutated, "1.29", strict=True)


def test_share_process_namespace_can_be_turned_off_per_operator() -> None:
    mutated = inject(make_job(PROFILED), Settings(sidecar_share_process_namespace=False).injection)
    assert mutated is not None
    assert "shareProcessNamespace" not in mutated["spec"]["template"]["spec"]


def test_a_container_already_on_the_collector_port_prevents_injection() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 9105}]
    assert inject(job, Settings().injection) is None


def test_a_regular_container_named_like_the_collector_counts_as_injected() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["containers"].append({"name": CONTAINER_NAME, "image": "x"})
    assert plan_injection(job, Settings().injection) == []


def test_template_labels_mark_the_pods_that_carry_a_collector() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["metadata"] = {"labels": {"app": "train"}}
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    assert mutated["spec"]["template"]["metadata"]["labels"] == {"app": "train", "bottleneck.dev/collector": "true"}


def test_non_job_and_non_mapping_inputs_give_no_plan() -> None:
    assert (
        plan_injection(
            {"kind": "Job", "apiVersion": "batch/v2", "metadata": {"annotations": PROFILED}}, Settings().injection
        )
        == []
    )
    assert plan_injection({"kind": "Job", "metadata": {"annotations": ["x"]}}, Settings().injection) == []
    assert plan_injection({"kind": "Job", "metadata": None}, Settings().injection) == []
    assert plan_injection([], Settings().injection) == []  # type: ignore[arg-type]


def test_configure_admission_uses_the_certificate_directory(tmp_path: Any, monkeypatch: Any) -> None:
    from bottleneck_operator.webhook import context

    monkeypatch.setattr(context, "_configured", None)  # configure_admission sets it; restored afterwards
    kopf_settings = kopf.OperatorSettings()
    configure_admission(kopf_settings, Settings(webhook_cert_dir=tmp_path, webhook_port=9443).injection)
    server = kopf_settings.admission.server
    assert isinstance(server, kopf.WebhookServer)
    assert server.port == 9443
    assert server.certfile == str(tmp_path / "tls.crt") and server.pkeyfile == str(tmp_path / "tls.key")
    assert kopf_settings.admission.managed is None

    off = kopf.OperatorSettings()
    configure_admission(off, Settings(webhook_enabled=False).injection)
    assert off.admission.server is None


def test_guaranteed_pods_stay_guaranteed() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "8", "memory": "64Gi"},
    }
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    resources = _sidecar(mutated)["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "50m", "memory": "64Mi"}


def test_burstable_pods_get_the_small_requests() -> None:
    job = make_job(PROFILED)
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "8"}, "requests": {"cpu": "2"}}
    mutated = inject(job, Settings().injection)
    assert mutated is not None
    assert _sidecar(mutated)["resources"]["requests"] == {"cpu": "10m", "memory": "32Mi"}


def test_handler_settings_come_from_the_operators_memo_first(monkeypatch: Any) -> None:
    import types

    from bottleneck_operator.webhook import context, handlers

    monkeypatch.setattr(context, "_configured", None)  # restored afterwards

    mine = Settings(sidecar_image="from-memo:1").injection
    assert handlers.current_settings(types.SimpleNamespace(settings=mine)) is mine
    assert handlers.current_settings(types.SimpleNamespace(state=types.SimpleNamespace(injection=mine))) is mine
    handlers.configure(Settings(sidecar_image="configured:1").injection)
    assert handlers.current_settings(types.SimpleNamespace()).sidecar_image == "configured:1"


def test_handler_swallows_errors_so_the_job_is_admitted(monkeypatch: Any) -> None:
    from bottleneck_operator.webhook import handlers

    def boom(job: Any, settings: Any, **_: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(handlers, "injection", boom)
    patch = kopf.Patch()
    handlers.inject_sidecar(body=make_job(PROFILED), patch=patch, operation="CREATE")  # type: ignore[arg-type]
    assert not patch
