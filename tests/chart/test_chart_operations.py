"""What a platform team runs the chart with: collectors always scraped, a NetworkPolicy, GitOps-friendly certificates."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from ._helpers import (
    NAMESPACE,
    NO_POD_MONITOR,
    POD_MONITOR_ON,
    Manifest,
    find,
    one,
    operator_container,
    render_docs,
    render_notes,
)

NOT_AFTER = "bottleneck.dev/certificate-not-after"
SECRET = "bn-bottleneck-operator-webhook-tls"


# Collectors are scraped whenever they are injected.


def test_pod_monitor_comes_with_injection_by_default(rendered: dict[str, list[Manifest]]) -> None:
    for scenario in ("default", "namespaced", "cert-manager"):
        assert one(rendered[scenario], "PodMonitor")["metadata"]["name"] == "bn-bottleneck-operator-collectors"


def test_asking_for_the_pod_monitor_without_the_prometheus_operator_stops_with_a_clear_message(chart: Any) -> None:
    with pytest.raises(helm.HelmRenderError) as failure:
        render_docs(chart, POD_MONITOR_ON, api_versions=[])
    message = str(failure.value)
    assert "no PodMonitor kind" in message
    assert "sidecar.podMonitor.enabled=false" in message and "sidecar.podMonitor.enabled=auto" in message
    assert "--api-versions monitoring.coreos.com/v1/PodMonitor" in message


def test_another_groups_pod_monitor_is_not_taken_for_the_prometheus_operators(chart: Any) -> None:
    other = ["monitoring.example.com/v1/PodMonitor", "monitoring.coreos.com/v1alpha1"]
    with pytest.raises(helm.HelmRenderError):
        render_docs(chart, POD_MONITOR_ON, api_versions=other)
    assert not find(render_docs(chart, {}, api_versions=other), "PodMonitor")


def test_turning_the_pod_monitor_off_installs_without_the_crds(chart: Any) -> None:
    docs = render_docs(chart, NO_POD_MONITOR, api_versions=[])
    assert not find(docs, "PodMonitor")
    assert one(docs, "MutatingWebhookConfiguration")


def test_notes_say_who_scrapes_the_collectors_when_the_chart_does_not(chart: Any) -> None:
    assert "bottleneck.dev/collector=true" in render_notes(chart, NO_POD_MONITOR)
    assert "bottleneck.dev/collector=true" not in render_notes(chart, {})


def test_no_pod_monitor_without_injection(chart: Any) -> None:
    # no webhook, no collectors to scrape: nothing to ask of the cluster
    docs = render_docs(chart, {"webhook": {"enabled": False}}, api_versions=[])
    assert not find(docs, "PodMonitor")
    assert not find(render_docs(chart, {"webhook": {"enabled": False}}), "PodMonitor")


# NetworkPolicy


def _ports(rules: list[dict[str, Any]]) -> set[tuple[str, int]]:
    return {(p["protocol"], p["port"]) for rule in rules for p in rule["ports"]}


def test_network_policy_is_off_by_default(rendered: dict[str, list[Manifest]]) -> None:
    assert not find(rendered["default"], "NetworkPolicy")


def test_network_policy_admits_only_what_the_operator_needs(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["full"]
    policy = one(docs, "NetworkPolicy")["spec"]
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    container_ports = {p["name"]: p["containerPort"] for p in operator_container(docs)["ports"]}
    # in: the API server to the webhook, Prometheus to the metrics; not the health port (the kubelet is local)
    webhook_in, metrics_in = policy["ingress"]
    assert _ports([webhook_in]) == {("TCP", container_ports["webhook"])}
    assert webhook_in["from"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}]
    assert _ports([metrics_in]) == {("TCP", container_ports["metrics"])}
    assert metrics_in["from"] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    ]
    # out: the API server, Prometheus, DNS
    api, prometheus, dns = policy["egress"]
    assert _ports([api]) == {("TCP", 443), ("TCP", 6443)} and api["to"] == webhook_in["from"]
    assert _ports([prometheus]) == {("TCP", 9090)} and prometheus["to"] == metrics_in["from"]
    assert _ports([dns]) == {("UDP", 53), ("TCP", 53)}
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}


def test_network_policy_follows_ports_and_features(chart: Any) -> None:
    values = {
        "networkPolicy": {"enabled": True, "prometheus": {"ports": [10902]}},
        "webhook": {"enabled": False, "port": 8443},
        "metrics": {"enabled": False},
    }
    document = one(render_docs(chart, values), "NetworkPolicy")
    kubernetes_validate.validate(document, "1.29.0", strict=True)
    policy = document["spec"]
    # nothing served: every ingress is refused
    assert not policy.get("ingress")
    assert ("TCP", 10902) in _ports(policy["egress"]) and ("TCP", 9090) not in _ports(policy["egress"])
    # no API server peers given: any address, on its ports only
    assert "to" not in policy["egress"][0]
    webhook_in = one(render_docs(chart, {"networkPolicy": {"enabled": True}}), "NetworkPolicy")["spec"]["ingress"][0]
    assert "from" not in webhook_in and _ports([webhook_in]) == {("TCP", 9443)}


# Readiness


@pytest.mark.parametrize("scenario", ["default", "full"])
def test_readiness_probes_kopfs_health_endpoint(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    container = operator_container(rendered[scenario])
    liveness, readiness = container["livenessProbe"], container["readinessProbe"]
    # kopf serves one endpoint: both probes ask it
    assert readiness["httpGet"] == liveness["httpGet"] == {"path": "/healthz", "port": "healthz"}
    # ready sooner and checked more often than the restart decision
    assert readiness["initialDelaySeconds"] < liveness["initialDelaySeconds"]
    assert readiness["periodSeconds"] < liveness["periodSeconds"]


# Certificates under GitOps: a certificate the user supplies, and the expiry recorded for reuse.


def test_a_certificate_the_user_supplies(chart: Any) -> None:
    values = {"webhook": {"existingCertificate": {"secretName": "corp-webhook-tls", "caBundle": "Q0EgUEVN"}}}
    docs = render_docs(chart, values)
    assert not find(docs, "Secret"), "the user's Secret, not the chart's"
    webhooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    assert all(webhook["clientConfig"]["caBundle"] == "Q0EgUEVN" for webhook in webhooks)
    volume = next(
        v for v in one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "webhook-tls"
    )
    assert volume["secret"]["secretName"] == "corp-webhook-tls"
    # renders the same every time: nothing generated
    assert render_docs(chart, values) == docs


def test_a_supplied_certificate_needs_its_ca(chart: Any) -> None:
    with pytest.raises(helm.HelmRenderError, match=r"existingCertificate\.caBundle is empty"):
        render_docs(chart, {"webhook": {"existingCertificate": {"secretName": "corp-webhook-tls"}}})
    with pytest.raises(helm.HelmValuesError):
        render_docs(chart, {"webhook": {"existingCertificate": {"secretName": "x", "caBundle": "not base64!"}}})


def test_cert_manager_wins_over_a_supplied_certificate(chart: Any) -> None:
    values = {"webhook": {"certManager": {"enabled": True}, "existingCertificate": {"secretName": "corp-webhook-tls"}}}
    docs = render_docs(chart, values)
    assert one(docs, "Certificate", "bn-bottleneck-operator-webhook")["spec"]["secretName"] == SECRET
    volume = next(
        v for v in one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "webhook-tls"
    )
    assert volume["secret"]["secretName"] == SECRET


def test_offline_renders_make_a_new_pair_each_time(chart: Any) -> None:
    # What Argo CD sees: no cluster access, so `lookup` finds nothing and the pair changes every render.
    # This is why docs/install.md sends GitOps installs to cert-manager or existingCertificate.
    first, second = (one(render_docs(chart), "Secret", SECRET) for _ in range(2))
    assert first["data"]["ca.crt"] != second["data"]["ca.crt"]


def test_upgrade_keeps_the_recorded_expiry(chart: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Helm's `lookup` against a real (emulated) API server, as in test_chart_webhook.
    from bottleneck_operator_dev.demo import cluster as emulated

    monkeypatch.setitem(emulated._RESOURCES, "v1/secrets", {"kind": "Secret", "singular": "secret", "namespaced": True})
    values = {**NO_POD_MONITOR, "prometheusRule": {"enabled": True}}
    installed = one(render_docs(chart, values), "Secret", SECRET)
    installed["metadata"]["annotations"][NOT_AFTER] = "2031-05-01T00:00:00Z"
    with emulated.LocalCluster() as kube:
        kube.create("v1/secrets", NAMESPACE, installed)
        with helm.Config(kubeconfig_content=emulated.kubeconfig_text(kube.url), namespace=NAMESPACE) as config:

            def upgrade() -> list[Manifest]:
                out = config.render(chart, values, name="bn", namespace=NAMESPACE, is_upgrade=True, revision=2)
                return [d for p, t in out.items() if not p.endswith("NOTES.txt") for d in yaml.safe_load_all(t) if d]

            docs = upgrade()
            secret = one(docs, "Secret", SECRET)
            assert secret["data"] == installed["data"]
            assert secret["metadata"]["annotations"][NOT_AFTER] == "2031-05-01T00:00:00Z"
            (group,) = one(docs, "PrometheusRule")["spec"]["groups"]
            expiry = next(r for r in group["rules"] if r["alert"] == "BottleneckWebhookCertificateExpiring")
            assert expiry["expr"].startswith("vector(1935360000) - time()")
            # a Secret from before the expiry was recorded: reused as it is, and no expiry alert on a guess
            kube.patch("v1/secrets", NAMESPACE, SECRET, {"metadata": {"annotations": {NOT_AFTER: None}}})
            docs = upgrade()
            assert one(docs, "Secret", SECRET)["data"] == installed["data"]
            assert "annotations" not in one(docs, "Secret", SECRET)["metadata"]
            (group,) = one(docs, "PrometheusRule")["spec"]["groups"]
            assert "BottleneckWebhookCertificateExpiring" not in {r["alert"] for r in group["rules"]}
