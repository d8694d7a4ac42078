"""Settings nested by concern: flat names outside (environment, keywords, errors), frozen groups inside."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field, ValidationError

from bottleneck_operator.cli import main
from bottleneck_operator.settings import (
    GROUP_OF,
    GROUPS,
    LabelSettings,
    OperationSettings,
    PrometheusSettings,
    Settings,
    group_of,
)


def test_every_field_reads_its_flat_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    # One variable per field, each set to a value other than its default: each must land in its group.
    given = {
        "BOTTLENECK_PROMETHEUS_RETRIES": ("prometheus", "prometheus_retries", "7", 7),
        "BOTTLENECK_SCRAPE_JOBS": (
            "labels",
            "scrape_jobs",
            '{"node": ["ne"], "dcgm": []}',
            (("dcgm", ()), ("node", ("ne",))),
        ),
        "BOTTLENECK_SELECTOR_MATCHERS": ("labels", "selector_matchers", '["cluster=\\"a\\""]', ('cluster="a"',)),
        "BOTTLENECK_WINDOW": ("analysis", "window", "1200", 1200.0),
        "BOTTLENECK_SIDECAR_IMAGE": ("injection", "sidecar_image", "example.org/c:1", "example.org/c:1"),
        "BOTTLENECK_LEASE_NAME": ("operation", "lease_name", "other", "other"),
    }
    for var, (_, _, raw, _) in given.items():
        monkeypatch.setenv(var, raw)
    settings = Settings()
    for group, name, _, expected in given.values():
        assert getattr(getattr(settings, group), name) == expected, name


def test_a_keyword_beats_the_environment_and_a_group_given_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_URL", "http://from-env:9090")
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_RETRIES", "5")
    flat = Settings(prometheus_url="http://from-keyword:9090")
    assert flat.prometheus.prometheus_url == "http://from-keyword:9090"
    assert flat.prometheus.prometheus_retries == 5  # the rest of the group still from the environment
    whole = Settings(prometheus=PrometheusSettings(prometheus_url="http://whole:9090"), prometheus_timeout=3.0)
    # A group given whole replaces the environment's values for it; a flat keyword still refines it.
    assert whole.prometheus.prometheus_url == "http://whole:9090"
    assert whole.prometheus.prometheus_retries == 2
    assert whole.prometheus.prometheus_timeout == 3.0


def test_groups_are_frozen_and_hashable_where_consumers_key_on_them() -> None:
    a = Settings(selector_matchers=['cluster="a"'], scrape_jobs={"node": ["ne"], "dcgm": ["d"]}).labels
    b = Settings(selector_matchers=['cluster="a"'], scrape_jobs={"dcgm": ["d"], "node": ["ne"]}).labels
    # The layout cache keys on the label mapping: equal settings written in another order are one key.
    assert {a: 1}[b] == 1
    assert a.scrape_jobs == (("dcgm", ("d",)), ("node", ("ne",)))
    with pytest.raises(ValidationError, match="frozen"):
        a.dcgm_pod_label = "p"  # type: ignore[misc]


def test_a_misspelt_field_inside_a_group_is_refused() -> None:
    # Flat unknown names are ignored (the environment holds other programs' variables); inside a
    # group given as a mapping, a name that no field has is a mistake.
    assert not hasattr(Settings(no_such_setting=1).prometheus, "no_such_setting")
    with pytest.raises(ValidationError, match="prometheus_urll"):
        Settings(prometheus={"prometheus_urll": "http://x:9090"})


def test_cross_field_rules_hold_within_their_group() -> None:
    with pytest.raises(ValidationError, match="lease_retry_period < lease_renew_deadline"):
        Settings(lease_duration=5.0, lease_renew_deadline=8.0)
    assert OperationSettings(lease_duration=30.0, lease_renew_deadline=20.0).lease_retry_period == 2.0


def test_two_groups_may_not_declare_one_name() -> None:
    class A(BaseModel):
        shared: int = Field(1, description="a")

    class B(BaseModel):
        shared: int = Field(2, description="b")

    with pytest.raises(TypeError, match="'shared' is declared in both 'a' and 'b'"):
        group_of((("a", A), ("b", B)))
    assert group_of(GROUPS) == GROUP_OF


def test_effective_settings_are_flat_and_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_URL", "http://user:hunter2@prom.example:9090")
    shown = Settings().effective()
    assert sorted(shown) == sorted(GROUP_OF)
    assert shown["prometheus_url"] == "http://***@prom.example:9090"
    assert shown["scrape_jobs"]["node"] == ["node-exporter"]
    json.dumps(shown)  # logged as JSON: every value must serialise


def test_a_rejected_setting_is_named_as_the_user_wrote_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOTTLENECK_LEASE_DURATION", "5")
    monkeypatch.setenv("BOTTLENECK_MIN_COVERAGE", "2")
    code = main(["analyze", "--namespace", "ml", "--job", "train-1", "--prometheus-url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2
    assert "min_coverage: " in err and "analysis.min_coverage" not in err
    assert "lease timing needs" in err and "operation" not in err
    assert "Traceback" not in err


def test_label_settings_need_no_other_group() -> None:
    # Consumers build a group alone (tests, the webhook): its defaults are those Settings gives.
    assert LabelSettings() == Settings().labels


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"dcgm": "dcgm-exporter"}', "the jobs of 'dcgm' must be a list of job names"),
        ('{"gpu": ["x"]}', "scrape_jobs.0.0"),
    ],
)
def test_a_malformed_scrape_jobs_mapping_is_refused_with_its_name(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("BOTTLENECK_SCRAPE_JOBS", value)
    with pytest.raises(ValidationError, match=message):
        Settings()


def test_a_copy_takes_flat_names_to_their_group() -> None:
    base = Settings(step=15.0)
    # Below the floor on purpose: a copy is not validated (tests and the demo run faster than a cluster).
    fast = base.model_copy(update={"interval": 1.0, "max_query_bytes": 10**7, "labels": base.labels})
    assert fast.analysis.interval == 1.0 and fast.analysis.step == 15.0
    assert fast.prometheus.max_query_bytes == 10**7
    assert base.analysis.interval == 60.0 and base.prometheus.max_query_bytes == 12000
    assert not hasattr(fast, "interval")
