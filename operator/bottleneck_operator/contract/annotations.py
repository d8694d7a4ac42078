"""The one parser of the opt-in annotations, shared by the operator and the admission webhook.

Both sides read the same value the same way, so a Job that is analysed is also a Job that gets a
collector (unless it opts out of the collector alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from bottleneck_operator.contract.names import HOST_CGROUP_ANNOTATION, PROFILE_ANNOTATION, SIDECAR_ANNOTATION

__all__ = ["Choice", "parse_switch", "profile_choice", "wants_collector", "wants_host_cgroup"]


class Choice(StrEnum):
    """What an on/off annotation says."""

    ON = "on"  # "true", any case, surrounding blanks ignored
    OFF = "off"  # absent, "false" or empty
    INVALID = "invalid"  # anything else: the user meant something; say so


def parse_switch(value: object) -> Choice:
    """Read an on/off annotation value (``None`` when the annotation is absent)."""
    if value is None:
        return Choice.OFF
    if not isinstance(value, str):
        return Choice.INVALID
    text = value.strip().lower()
    if text == "true":
        return Choice.ON
    if text in ("false", ""):
        return Choice.OFF
    return Choice.INVALID


def _annotations(metadata: Mapping[str, object] | None) -> Mapping[str, object]:
    found = (metadata or {}).get("annotations")
    return found if isinstance(found, Mapping) else {}


def profile_choice(metadata: Mapping[str, object] | None) -> Choice:
    """Whether a workload opted in to profiling (``bottleneck.dev/profile``), from its metadata."""
    return parse_switch(_annotations(metadata).get(PROFILE_ANNOTATION))


def wants_collector(metadata: Mapping[str, object] | None) -> bool:
    """Profiled, and not opted out of the collector alone (``bottleneck.dev/sidecar: "false"``)."""
    annotations = _annotations(metadata)
    if parse_switch(annotations.get(PROFILE_ANNOTATION)) is not Choice.ON:
        return False
    return parse_switch(annotations.get(SIDECAR_ANNOTATION, "true")) is not Choice.OFF


def wants_host_cgroup(metadata: Mapping[str, object] | None) -> bool:
    """The collector may mount the node's cgroup tree unless ``…/sidecar-host-cgroup: "false"``."""
    return parse_switch(_annotations(metadata).get(HOST_CGROUP_ANNOTATION, "true")) is not Choice.OFF
