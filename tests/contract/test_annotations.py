"""The one annotation parser: the operator analyses exactly the Jobs the webhook gives a collector."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bottleneck_operator.contract.annotations import Choice, parse_switch, profile_choice, wants_collector
from bottleneck_operator.contract.names import PROFILE_ANNOTATION, SIDECAR_ANNOTATION
from bottleneck_operator.webhook.inject import wants_injection


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", Choice.ON),
        (" True ", Choice.ON),
        ("TRUE", Choice.ON),
        ("false", Choice.OFF),
        (None, Choice.OFF),
        ("", Choice.OFF),
        ("yes please", Choice.INVALID),
        ("1", Choice.INVALID),
        (1, Choice.INVALID),
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
        assert parse_switch(annotations.get(SIDECAR_ANNOTATION)) is Choice.OFF


def test_a_job_annotated_true_in_capitals_is_analysed_and_gets_a_collector() -> None:
    annotations = {PROFILE_ANNOTATION: "True"}
    assert profile_choice({"annotations": annotations}) is Choice.ON
    assert wants_injection(_job(annotations))
