"""The admission webhook can never block a Job, and its TLS is right for in-cluster DNS."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bottleneck_operator.contract.names import PROFILED_POD_LABEL
from bottleneck_operator.webhook import handlers, unsupported
from bottleneck_operator.webhook.templates import workload_resources

from ._helpers import (
    NAMESPACE,
    NO_POD_MONITOR,
    PROMETHEUS_OPERATOR_APIS,
    SCENARIOS,
    WATCHED,
    Manifest,
    find,
    one,
    operator_container,
    render_docs,
    settings_env,
)

SERVICE = "bn-bottleneck-operator-webhook"


def dns_names(namespace: str = NAMESPACE) -> list[str]:
    return [SERVICE, f"{SERVICE}.{namespace}", f"{SERVICE}.{namespace}.svc", f"{SERVICE}.{namespace}.svc.cluster.local"]


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels AND every matchExpression)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        value = labels.get(expr["key"])
        op = expr["operator"]
        if op == "In" and value not in expr["values"]:
            return False
        if op == "NotIn" and value in expr["values"]:
            return False
        if op == "Exists" and value is None:
            return False
        if op == "DoesNotExist" and value is not None:
            return False
    return True


def sends(webhook: dict[str, Any], namespace: str) -> bool:
    """Whether the API server would send a Job created in ``namespace`` to this webhook."""
    return selector_matches(webhook.get("namespaceSelector", {}), {"kubernetes.io/metadata.name": namespace})


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_webhook_can_never_block(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    webhook, *_pod_webhooks = one(rendered[scenario], "MutatingWebhookConfiguration")["webhooks"]
    assert webhook["failurePolicy"] == "Ignore"
    assert 1 <= webhook["timeoutSeconds"] <= 10
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["rules"] == [
        {
            "apiGroups": ["batch"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["jobs"],
            "scope": "Namespaced",
        }
    ]
    assert not sends(webhook, NAMESPACE), "the operator's own namespace must be excluded"
    assert not sends(webhook, "kube-system")


def test_excludes_whatever_namespace_the_release_is_in(chart: Any) -> None:
    docs = render_docs(chart, {}, namespace="ops")
    webhook, *_pod_webhooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    assert not sends(webhook, "ops")
    assert sends(webhook, NAMESPACE)
    assert webhook["clientConfig"]["service"]["namespace"] == "ops"


def test_cluster_wide_sends_every_other_namespace(rendered: dict[str, list[Manifest]]) -> None:
    webhook, *_pod_webhooks = one(rendered["default"], "MutatingWebhookConfiguration")["webhooks"]
    assert sends(webhook, "ml-team-a")
    assert sends(webhook, "research")
    assert "objectSelector" not in webhook


def test_namespaced_sends_only_watched_namespaces(rendered: dict[str, list[Manifest]]) -> None:
    webhook, *_pod_webhooks = one(rendered["namespaced"], "MutatingWebhookConfiguration")["webhooks"]
    assert all(sends(webhook, ns) for ns in WATCHED)
    assert not sends(webhook, "research")


def test_namespaced_watching_only_its_own_namespace_sends_nothing(chart: Any) -> None:
    docs = render_docs(chart, {"watchNamespaces": [NAMESPACE]})
    webhook, *_pod_webhooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    assert not sends(webhook, NAMESPACE)
    assert not sends(webhook, "research")


def test_object_selector_is_optional(rendered: dict[str, list[Manifest]]) -> None:
    webhook, *_pod_webhooks = one(rendered["full"], "MutatingWebhookConfiguration")["webhooks"]
    assert webhook["objectSelector"] == {"matchLabels": {"team": "ml"}}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_service_routes_to_the_operators_webhook_port(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    docs = rendered[scenario]
    webhook, *_pod_webhooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    target = webhook["clientConfig"]["service"]
    assert target == {"name": SERVICE, "namespace": NAMESPACE, "path": "/inject-sidecar", "port": 443}
    service = one(docs, "Service", SERVICE)
    (port,) = service["spec"]["ports"]
    assert port["port"] == 443
    container = operator_container(docs)
    by_name = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert by_name[port["targetPort"]] == 9443 == int(settings_env(docs)["BOTTLENECK_WEBHOOK_PORT"])
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_certificate_is_mounted_where_the_operator_reads_it(rendered: dict[str, list[Manifest]]) -> None:
    for scenario in ("default", "cert-manager"):
        docs = rendered[scenario]
        container = operator_container(docs)
        cert_dir = settings_env(docs)["BOTTLENECK_WEBHOOK_CERT_DIR"]
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == cert_dir)
        assert mount["readOnly"] is True
        volume = next(
            v for v in one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
        )
        assert volume["secret"]["secretName"] == "bn-bottleneck-operator-webhook-tls"
        assert {i["path"] for i in volume["secret"]["items"]} == {"tls.crt", "tls.key"}


def _openssl(*args: str, stdin: bytes | None = None) -> str:
    result = subprocess.run(["openssl", *args], input=stdin, capture_output=True, check=True)
    return result.stdout.decode()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is not installed")
def test_self_signed_certificate_is_valid_for_the_service(rendered: dict[str, list[Manifest]], tmp_path: Path) -> None:
    docs = rendered["default"]
    secret = one(docs, "Secret", "bn-bottleneck-operator-webhook-tls")
    assert secret["type"] == "kubernetes.io/tls"
    webhook, *_pod_webhooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    assert webhook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    files = {}
    for key in ("tls.crt", "tls.key", "ca.crt"):
        files[key] = tmp_path / key
        files[key].write_bytes(base64.b64decode(secret["data"][key]))
    # the serving certificate chains to the CA the API server is given
    assert "OK" in _openssl("verify", "-CAfile", str(files["ca.crt"]), str(files["tls.crt"]))
    san = _openssl("x509", "-in", str(files["tls.crt"]), "-noout", "-ext", "subjectAltName")
    assert sorted(part.strip().removeprefix("DNS:") for part in san.splitlines()[1].split(",")) == sorted(dns_names())
    # the key belongs to the certificate
    cert_pub = _openssl("x509", "-in", str(files["tls.crt"]), "-noout", "-pubkey")
    key_pub = _openssl("pkey", "-in", str(files["tls.key"]), "-pubout")
    assert cert_pub == key_pub
    # good for years, not days
    assert "Certificate will not expire" in _openssl(
        "x509", "-in", str(files["tls.crt"]), "-noout", "-checkend", str(365 * 86400)
    )


def test_cert_manager_issues_the_certificate(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["cert-manager"]
    assert not find(docs, "Secret"), "cert-manager writes the Secret, the chart does not"
    configuration = one(docs, "MutatingWebhookConfiguration")
    webhook, *_pod_webhooks = configuration["webhooks"]
    assert "caBundle" not in webhook["clientConfig"]
    certificate = one(docs, "Certificate", "bn-bottleneck-operator-webhook")
    assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NAMESPACE}/bn-bottleneck-operator-webhook"
    )
    spec = certificate["spec"]
    assert sorted(spec["dnsNames"]) == sorted(dns_names())
    assert spec["secretName"] == "bn-bottleneck-operator-webhook-tls"
    assert "server auth" in spec["usages"]
    # a CA of its own, so renewing the serving certificate keeps the injected caBundle valid
    issuers = {i["metadata"]["name"]: i["spec"] for i in find(docs, "Issuer")}
    assert issuers == {
        "bn-bottleneck-operator-selfsigned": {"selfSigned": {}},
        "bn-bottleneck-operator-ca": {"ca": {"secretName": "bn-bottleneck-operator-ca"}},
    }
    ca = one(docs, "Certificate", "bn-bottleneck-operator-ca")["spec"]
    assert ca["isCA"] is True and ca["issuerRef"]["name"] == "bn-bottleneck-operator-selfsigned"
    assert spec["issuerRef"] == {"group": "cert-manager.io", "kind": "Issuer", "name": "bn-bottleneck-operator-ca"}
    for doc in find(docs, "Certificate") + find(docs, "Issuer"):
        assert doc["apiVersion"] == "cert-manager.io/v1"


def test_cert_manager_with_an_existing_issuer(chart: Any) -> None:
    values = {"webhook": {"certManager": {"enabled": True, "issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}}}}
    docs = render_docs(chart, values)
    assert not find(docs, "Issuer")
    certificate = one(docs, "Certificate")
    assert certificate["spec"]["issuerRef"] == {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "corp-ca"}


def test_webhook_can_be_turned_off(chart: Any) -> None:
    docs = render_docs(chart, {"webhook": {"enabled": False}})
    for kind in ("MutatingWebhookConfiguration", "Secret", "Certificate"):
        assert not find(docs, kind)
    assert [s["metadata"]["name"] for s in find(docs, "Service")] == ["bn-bottleneck-operator-metrics"]
    env = settings_env(docs)
    assert env["BOTTLENECK_WEBHOOK_ENABLED"] == "false"
    assert "BOTTLENECK_WEBHOOK_CERT_DIR" not in env
    assert all(m["name"] != "webhook-tls" for m in operator_container(docs)["volumeMounts"])


def test_upgrade_reuses_the_certificate_in_the_cluster(
    chart: Any, rendered: dict[str, list[Manifest]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Helm's `lookup` against a real (emulated) API server: the Secret of the first install is reused.
    import helm_python as helm

    from bottleneck_operator_dev.demo import cluster as emulated

    monkeypatch.setitem(emulated._RESOURCES, "v1/secrets", {"kind": "Secret", "singular": "secret", "namespaced": True})
    installed = one(rendered["default"], "Secret", "bn-bottleneck-operator-webhook-tls")
    with emulated.LocalCluster() as kube:
        kube.create("v1/secrets", NAMESPACE, installed)
        with helm.Config(kubeconfig_content=emulated.kubeconfig_text(kube.url), namespace=NAMESPACE) as config:

            def upgrade() -> list[Manifest]:
                # the emulator serves no monitoring.coreos.com: the PodMonitor is turned off explicitly
                out = config.render(chart, NO_POD_MONITOR, name="bn", namespace=NAMESPACE, is_upgrade=True, revision=2)
                return [
                    d
                    for path, text in out.items()
                    if not path.endswith("NOTES.txt")
                    for d in yaml.safe_load_all(text)
                    if d
                ]

            docs = upgrade()
            assert one(docs, "Secret")["data"] == installed["data"]
            webhook, *_pod_webhooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
            assert webhook["clientConfig"]["caBundle"] == installed["data"]["ca.crt"]
            # a Secret without its CA (made by hand, say) is replaced by a fresh pair
            kube.patch("v1/secrets", NAMESPACE, "bn-bottleneck-operator-webhook-tls", {"data": {"ca.crt": None}})
            fresh = one(upgrade(), "Secret")["data"]
            assert fresh["tls.crt"] != installed["data"]["tls.crt"] and fresh["ca.crt"]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_only_pods_of_profiled_workloads_reach_the_pod_webhook(
    rendered: dict[str, list[Manifest]], scenario: str
) -> None:
    hooks = one(rendered[scenario], "MutatingWebhookConfiguration")["webhooks"]
    job_hook, mark_hook, pod_hook = [h for h in hooks if h["name"] != "notice-unsupported.bottleneck.dev"]
    for hook in (mark_hook, pod_hook):
        assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None"
        assert hook["namespaceSelector"] == job_hook["namespaceSelector"]
    # The workload webhook gets every kind the handlers mark, in every version served.
    assert mark_hook["clientConfig"]["service"]["path"] == f"/{handlers.WORKLOAD_HANDLER_ID}"
    assert "objectSelector" not in mark_hook
    sent = {
        (group, version, resource)
        for rule in mark_hook["rules"]
        for group in rule["apiGroups"]
        for version in rule["apiVersions"]
        for resource in rule["resources"]
    }
    assert sent == set(workload_resources())
    assert all(rule["operations"] == ["CREATE"] for rule in mark_hook["rules"])
    # The pod webhook: pods only, and only those whose template the workload webhook labelled.
    assert pod_hook["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    assert pod_hook["clientConfig"]["service"]["path"] == f"/{handlers.POD_HANDLER_ID}"
    assert pod_hook["objectSelector"] == {"matchLabels": {PROFILED_POD_LABEL: "true"}}


def test_unsupported_kinds_are_routed_to_the_notice_and_nowhere_else(chart: Any) -> None:
    hooks = one(render_docs(chart, api_versions=PROMETHEUS_OPERATOR_APIS), "MutatingWebhookConfiguration")["webhooks"]
    (notice,) = [h for h in hooks if h["name"] == "notice-unsupported.bottleneck.dev"]
    assert notice["clientConfig"]["service"]["path"] == "/" + unsupported.HANDLER_ID
    assert notice["failurePolicy"] == "Ignore" and notice["sideEffects"] == "NoneOnDryRun"
    routed = {
        (g, v, r)
        for rule in notice["rules"]
        for g in rule["apiGroups"]
        for v in rule["apiVersions"]
        for r in rule["resources"]
    }
    assert routed == set(unsupported.WATCHED)
    assert all(rule["operations"] == ["CREATE", "UPDATE"] for rule in notice["rules"])
    off = render_docs(chart, {"webhook": {"noticeUnsupportedKinds": False}}, api_versions=PROMETHEUS_OPERATOR_APIS)
    names = [h["name"] for h in one(off, "MutatingWebhookConfiguration")["webhooks"]]
    assert "notice-unsupported.bottleneck.dev" not in names and "inject-sidecar.bottleneck.dev" in names
