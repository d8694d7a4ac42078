"""Name validation and PromQL escaping, checked against the real Prometheus's parser and regex engine."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bottleneck_operator.errors import EXIT_USAGE, UsageError
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry.errors import InvalidName, QueryRejected
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.plan.names import (
    escape_regex,
    quote,
    regex_alternation,
    validate_k8s_name,
    validate_label_name,
)


@pytest.mark.parametrize("value", ["ml", "a", "team-a", "x" * 63, "0abc"])
def test_valid_namespaces(value: str) -> None:
    assert validate_k8s_name("namespace", value) == value


@pytest.mark.parametrize("value", ["", "ML", "-a", "a-", "a.b", "x" * 64, 'a"}', "a b", "ns\n", "a|b", "é", ".*"])
def test_invalid_namespaces(value: str) -> None:
    with pytest.raises(InvalidName) as info:
        validate_k8s_name("namespace", value)
    assert isinstance(info.value, UsageError)
    assert info.value.exit_code == EXIT_USAGE
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("value", ["train", "train.v2", "resnet-50", "a" * 253])
def test_valid_job_names(value: str) -> None:
    assert validate_k8s_name("job", value) == value


@pytest.mark.parametrize("value", ["Train", "a..b", ".a", "a" * 254, 'x"} or vector(1)', "a/b", "a_b"])
def test_invalid_job_names(value: str) -> None:
    with pytest.raises(InvalidName):
        validate_k8s_name("job", value)


def test_label_name_settings() -> None:
    assert validate_label_name("dcgm_hostname_label", "Hostname") == "Hostname"
    for bad in ("", "1x", "a-b", 'x"'):
        with pytest.raises(InvalidName):
            validate_label_name("dcgm_hostname_label", bad)


def test_escaping_shapes() -> None:
    assert quote('a"b\\c\n') == '"a\\"b\\\\c\\n"'
    assert escape_regex("a.b*c") == "a\\.b\\*c"
    assert regex_alternation(["b", "a.x", "b"]) == "a\\.x|b"
    assert regex_alternation(["job"], suffix="-.+") == "job-.+"


@pytest.fixture(scope="module")
def client(basic_prometheus: Any) -> PrometheusClient:
    return PrometheusClient(Settings(prometheus_url=basic_prometheus.url, prometheus_retries=0))


def _label_of(client: PrometheusClient, value: str) -> dict[str, str]:
    """A one-series vector whose label x is set from the quoted literal, read back."""
    # label_replace expands $-references in its replacement: "$$" is a literal "$".
    expr = f'label_replace(vector(1), "x", {quote(value.replace("$", "$$"))}, "", "")'
    return dict(client.query(expr, time.time())[0]["metric"])


def _regex_matches(client: PrometheusClient, value: str, regex: str) -> bool:
    """Does Prometheus's (anchored RE2) regex match the value? label_replace uses the same engine as =~."""
    literal = quote(value.replace("$", "$$"))
    expr = f'label_replace(label_replace(vector(1), "x", {literal}, "", ""), "hit", "yes", "x", {quote(regex)})'
    return dict(client.query(expr, time.time())[0]["metric"]).get("hit") == "yes"


@pytest.mark.prometheus
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(min_size=1, max_size=40))
def test_any_string_round_trips_as_a_literal(client: PrometheusClient, value: str) -> None:
    assert _label_of(client, value).get("x") == value


@pytest.mark.prometheus
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(min_size=1, max_size=30), other=st.text(max_size=30))
def test_escaped_regex_matches_only_the_literal(client: PrometheusClient, value: str, other: str) -> None:
    regex = escape_regex(value)
    assert _regex_matches(client, value, regex)
    if other != value and other:
        assert not _regex_matches(client, other, regex)
    alternation = regex_alternation([value, "plain-name"])
    assert _regex_matches(client, value, alternation)
    assert _regex_matches(client, "plain-name", alternation)


@pytest.mark.prometheus
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=5))
def test_escaped_selectors_never_break_the_query(client: PrometheusClient, values: list[str]) -> None:
    # The real pod must still be found whatever hostile names share its matcher.
    pods = regex_alternation([*values, "resnet-io-7xk2p"])
    expr = f"kube_pod_info{{namespace={quote('ml')},pod=~{quote(pods)}}}"
    found = {row["metric"]["pod"] for row in client.query(expr, 1767225600 + 300)}
    assert "resnet-io-7xk2p" in found
    assert found <= {"resnet-io-7xk2p", "other-train-abcde", "legacy-job-q8v7z"}


@pytest.mark.prometheus
def test_empty_alternation_matches_nothing(client: PrometheusClient) -> None:
    expr = f"kube_pod_info{{pod=~{quote(regex_alternation([]))}}}"
    assert client.query(expr, 1767225600 + 300) == []
    # and not even series that lack the label
    assert not _regex_matches(client, "", regex_alternation([]))


@pytest.mark.prometheus
def test_unescaped_input_would_break_the_query(client: PrometheusClient) -> None:
    # Proves the round-trip tests can fail: a raw quote in a matcher is a parse error.
    with pytest.raises(QueryRejected, match="parse"):
        client.query('kube_pod_info{pod="a"b"}', time.time())
