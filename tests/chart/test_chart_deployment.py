"""The operator's Deployment: one replica, restricted security, probes, and settings the operator parses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.settings import GROUP_OF, Settings

from ._helpers import ROOT, SCENARIOS, WATCHED, Manifest, one, operator_container, render_docs, settings_env

# Volume types the Pod Security Standards' "restricted" profile allows.
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def pod_spec(docs: list[Manifest]) -> dict[str, Any]:
    return one(docs, "Deployment")["spec"]["template"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_meets_the_restricted_pod_security_standard(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    spec = pod_spec(rendered[scenario])
    pod = spec["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] != 0
    assert pod["seccompProfile"]["type"] == "RuntimeDefault"
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(key)
    for volume in spec["volumes"]:
        kinds = set(volume) - {"name"}
        assert kinds <= RESTRICTED_VOLUMES, volume
    for container in spec["containers"] + spec.get("initContainers", []):
        ctx = container["securityContext"]
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx["runAsNonRoot"] is True
        assert ctx["capabilities"]["drop"] == ["ALL"]
        assert not ctx["capabilities"].get("add")
        assert not ctx.get("privileged")
        assert not any(p.get("hostPort") for p in container.get("ports", []))


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_writable_tmp_on_a_read_only_root(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    docs = rendered[scenario]
    container = operator_container(docs)
    tmp = next(m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
    volume = next(v for v in pod_spec(docs)["volumes"] if v["name"] == tmp["name"])
    assert "emptyDir" in volume


def test_runs_as_the_images_user_with_the_images_entrypoint(rendered: dict[str, list[Manifest]]) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    user = re.findall(r"^USER\s+(\d+)", dockerfile, re.MULTILINE)[-1]
    assert pod_spec(rendered["default"])["securityContext"]["runAsUser"] == int(user)
    container = operator_container(rendered["default"])
    assert "command" not in container, "the image's ENTRYPOINT (bottleneck-operator) runs"
    assert container["args"] == ["run"]
    assert 'ENTRYPOINT ["bottleneck-operator"]' in dockerfile


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_requests_limits_and_liveness(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    docs = rendered[scenario]
    container = operator_container(docs)
    resources = container["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) == {"cpu", "memory"}
    probe = container["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[probe["port"]] == 8081
    # the probe asks the port kopf listens on
    assert settings_env(docs)["BOTTLENECK_LIVENESS_ENDPOINT"] == "http://0.0.0.0:8081/healthz"
    assert ports["metrics"] == int(settings_env(docs)["BOTTLENECK_METRICS_PORT"]) == 8080


def test_settings_config_map_holds_only_real_settings(rendered: dict[str, list[Manifest]]) -> None:
    known = {f"BOTTLENECK_{name.upper()}" for name in GROUP_OF}
    for scenario, docs in rendered.items():
        config = one(docs, "ConfigMap", "bn-bottleneck-operator")["data"]
        unknown = set(config) - known
        assert not unknown, (scenario, unknown)
    # every setting can be set through the chart
    covered = set(one(rendered["full"], "ConfigMap", "bn-bottleneck-operator")["data"]) | {
        e["name"] for e in operator_container(rendered["full"])["env"]
    }
    assert known <= covered, known - covered


def _settings_from(docs: list[Manifest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    for name in list(__import__("os").environ):
        if name.startswith("BOTTLENECK_"):
            monkeypatch.delenv(name)
    for name, value in settings_env(docs).items():
        monkeypatch.setenv(name, value)
    for item in operator_container(docs)["env"]:
        if "valueFrom" in item and item["name"].startswith("BOTTLENECK_"):
            monkeypatch.setenv(item["name"], "from-a-secret")
    monkeypatch.chdir(tmp_path)  # no stray .env file is read
    return Settings()  # type: ignore[call-arg]  # pydantic-settings reads the environment


def test_operator_parses_the_default_settings(
    rendered: dict[str, list[Manifest]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = _settings_from(rendered["default"], monkeypatch, tmp_path)
    assert settings.prometheus.prometheus_url == "http://prometheus-operated.monitoring.svc:9090"
    assert settings.operation.namespaces == ()
    assert settings.operation.report_retention == 30 * 86400
    assert settings.injection.webhook_enabled is True
    assert str(settings.injection.webhook_cert_dir) == "/etc/bottleneck-operator/webhook-tls"
    assert settings.injection.sidecar_image == "ghcr.io/bottleneck-dev/bottleneck-operator:0.1.0"
    assert settings.injection.sidecar_port == 9105
    assert settings.analysis.model_path is None
    assert settings.injection.sidecar_mount_host_cgroup is True
    assert settings.prometheus.prometheus_bearer_token_file is None


def test_operator_parses_every_optional_setting(
    rendered: dict[str, list[Manifest]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    docs = rendered["full"]
    settings = _settings_from(docs, monkeypatch, tmp_path)
    assert settings.prometheus.prometheus_headers == {"X-Scope-OrgID": "team-a"}
    assert settings.prometheus.prometheus_username == "bottleneck"
    assert settings.prometheus.prometheus_password is not None
    assert str(settings.analysis.model_path) == "/models/custom.skops"
    mounts = {m["mountPath"] for m in operator_container(docs)["volumeMounts"]}
    # secrets and CA arrive as files inside mounted volumes, never as chart values
    assert settings.prometheus.prometheus_bearer_token_file is not None
    assert str(settings.prometheus.prometheus_bearer_token_file.parent) in mounts
    assert settings.prometheus.prometheus_ca_file is not None
    assert str(settings.prometheus.prometheus_ca_file.parent) in mounts
    password = next(e for e in operator_container(docs)["env"] if e["name"] == "BOTTLENECK_PROMETHEUS_PASSWORD")
    assert password["valueFrom"]["secretKeyRef"] == {"name": "prometheus-basic-auth", "key": "password"}


def test_host_cgroup_mount_can_be_turned_off(chart: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    docs = render_docs(chart, {"sidecar": {"mountHostCgroup": False, "shareProcessNamespace": False}})
    settings = _settings_from(docs, monkeypatch, tmp_path)
    assert settings.injection.sidecar_mount_host_cgroup is False
    assert settings.injection.sidecar_share_process_namespace is False


def test_operator_parses_the_namespaced_settings(
    rendered: dict[str, list[Manifest]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert _settings_from(rendered["namespaced"], monkeypatch, tmp_path).operation.namespaces == tuple(WATCHED)


def test_whole_numbers_stay_whole(chart: Any) -> None:
    # Helm reads numbers as floats: a large retention must not become "2.592e+06" or "1e+07".
    docs = render_docs(chart, {"reports": {"retention": 10000000}, "analysis": {"minCoverage": 0.75}})
    config = one(docs, "ConfigMap", "bn-bottleneck-operator")["data"]
    assert config["BOTTLENECK_REPORT_RETENTION"] == "10000000"
    assert config["BOTTLENECK_MIN_COVERAGE"] == "0.75"


def test_settings_change_restarts_the_operator(chart: Any) -> None:
    def checksum(values: dict[str, Any]) -> str:
        docs = render_docs(chart, values)
        return one(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]  # type: ignore[no-any-return]

    assert checksum({}) == checksum({})
    assert checksum({}) != checksum({"analysis": {"interval": 120}})


def test_image_reference(chart: Any) -> None:
    def image(values: dict[str, Any]) -> tuple[str, str]:
        docs = render_docs(chart, values)
        return operator_container(docs)["image"], settings_env(docs)["BOTTLENECK_SIDECAR_IMAGE"]

    assert image({}) == ("ghcr.io/bottleneck-dev/bottleneck-operator:0.1.0",) * 2
    digest = "sha256:" + "ab" * 32
    pinned = f"ghcr.io/bottleneck-dev/bottleneck-operator@{digest}"
    assert image({"image": {"digest": digest}}) == (pinned, pinned)
    assert image({"sidecar": {"image": "registry.local/collector:1.2"}})[1] == "registry.local/collector:1.2"
