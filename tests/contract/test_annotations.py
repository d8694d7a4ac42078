"""The one annotation parser: the operator analyses exactly the Jobs the webhook gives a collector."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bottleneck_operator.contract.annotations import (
    Choice,
    invalid_switches,
    parse_switch,
    profile_choice,
    wants_collector,
    wants_host_cgroup,
)
from bottleneck_operator.contract.names import HOST_CGROUP_ANNOTATION, PROFILE_ANNOTATION, SIDECAR_ANNOTATION
from bottleneck_operator.webhook.inject import wants_injection


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", Choice.ON),
        ("false", Choice.OFF),
        (None, Choice.OFF),
        # Exactly "true" or "false": every near miss is invalid, none is read as either.
        (" True ", Choice.INVALID),
        ("TRUE", Choice.INVALID),
        ("False", Choice.INVALID),
        ("", Choice.INVALID),
        ("no", Choice.INVALID),
        ("0", Choice.INVALID),
        ("off", Choice.INVALID),
        ("yes", Choice.INVALID),
        ("on", Choice.INVALID),
        ("1", Choice.INVALID),
        (1, Choice.INVALID),
        (True, Choice.INVALID),
    ],
)
def test_switch_values(value: Any, expected: Choice) -> None:
    assert parse_switch(value) is expected


def _job(annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml", "annotations": annotations},
        "spec": {"template": {"spec": {"containers": [{"name": "train", "image": "x"}]}}},
    }


_values = st.one_of(
    st.sampled_from(["true", "True", " TRUE ", "false", "False", "", "yes", "1", "on"]),
    st.text(max_size=8),
)


@given(profile=st.one_of(st.none(), _values), sidecar=st.one_of(st.none(), _values))
def test_operator_and_webhook_agree(profile: str | None, sidecar: str | None) -> None:
    annotations = {k: v for k, v in ((PROFILE_ANNOTATION, profile), (SIDECAR_ANNOTATION, sidecar)) if v is not None}
    metadata = {"annotations": annotations}
    analysed = profile_choice(metadata) is Choice.ON
    injected = wants_injection(_job(annotations))
    assert injected == wants_collector(metadata)
    # A collector only for analysed Jobs; an analysed Job lacks one only when it opted out of it.
    assert not injected or analysed
    if analysed and not injected:
        # Opted out, or a value that is neither "true" nor "false": the safe choice is no collector.
        assert parse_switch(annotations.get(SIDECAR_ANNOTATION)) in (Choice.OFF, Choice.INVALID)


@pytest.mark.parametrize("value", ["no", "0", "off", "yes", "False", " true"])
def test_a_sloppy_switch_injects_nothing_and_is_named(value: str) -> None:
    for key in (SIDECAR_ANNOTATION, HOST_CGROUP_ANNOTATION):
        metadata = {"annotations": {PROFILE_ANNOTATION: "true", key: value}}
        assert invalid_switches(metadata) == [(key, value)]
    assert not wants_collector({"annotations": {PROFILE_ANNOTATION: "true", SIDECAR_ANNOTATION: value}})
    assert not wants_host_cgroup({"annotations": {PROFILE_ANNOTATION: "true", HOST_CGROUP_ANNOTATION: value}})
    assert not wants_injection(_job({PROFILE_ANNOTATION: "true", SIDECAR_ANNOTATION: value}))


def test_absent_or_exact_switches_keep_their_meaning() -> None:
    on = {"annotations": {PROFILE_ANNOTATION: "true"}}
    assert wants_collector(on) and wants_host_cgroup(on) and invalid_switches(on) == []
    off = {"annotations": {PROFILE_ANNOTATION: "true", SIDECAR_ANNOTATION: "false", HOST_CGROUP_ANNOTATION: "false"}}
    assert not wants_collector(off) and not wants_host_cgroup(off) and invalid_switches(off) == []


def test_a_job_annotated_true_in_capitals_is_not_analysed() -> None:
    annotations = {PROFILE_ANNOTATION: "True"}
    assert profile_choice({"annotations": annotations}) is Choice.INVALID
    assert not wants_injection(_job(annotations))
