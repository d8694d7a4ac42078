"""The one parser of the opt-in annotations, shared by the operator and the admission webhook.

Both sides read the same value the same way, so a Job that is analysed is also a Job that gets a
collector (unless it opts out of the collector alone).

A switch is exactly ``"true"`` or ``"false"``. Anything else (``"no"``, ``"0"``, ``"off"``,
``"yes"``, ``"True"``, an empty value) is :attr:`Choice.INVALID`: the user meant something, and
guessing what is how ``sidecar: "no"`` came to mean yes. An invalid switch takes the safe choice
(no profiling, no collector, no host mount) and is reported with a Warning Event by whoever reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from bottleneck_operator.contract.names import HOST_CGROUP_ANNOTATION, PROFILE_ANNOTATION, SIDECAR_ANNOTATION

__all__ = [
    "SWITCHES",
    "Choice",
    "invalid_switches",
    "parse_switch",
    "profile_choice",
    "refusal",
    "wants_collector",
    "wants_host_cgroup",
]

# Every on/off annotation a user sets on a workload.
SWITCHES = (PROFILE_ANNOTATION, SIDECAR_ANNOTATION, HOST_CGROUP_ANNOTATION)


class Choice(StrEnum):
    """What an on/off annotation says."""

    ON = "on"  # exactly "true"
    OFF = "off"  # exactly "false", or the annotation is absent
    INVALID = "invalid"  # anything else: the user meant something; say so


def parse_switch(value: object) -> Choice:
    """Read an on/off annotation value (``None`` when the annotation is absent)."""
    if value is None or value == "false":
        return Choice.OFF
    if value == "true":
        return Choice.ON
    return Choice.INVALID


def _annotations(metadata: Mapping[str, object] | None) -> Mapping[str, object]:
    found = (metadata or {}).get("annotations")
    return found if isinstance(found, Mapping) else {}


def invalid_switches(metadata: Mapping[str, object] | None) -> list[tuple[str, str]]:
    """(annotation, value) of each switch set to something other than ``true`` or ``false``."""
    annotations = _annotations(metadata)
    return [
        (key, str(annotations[key]))
        for key in SWITCHES
        if key in annotations and parse_switch(annotations[key]) is Choice.INVALID
    ]


def refusal(key: str, value: str) -> str:
    """The Warning Event's message for a collector switch that is neither true nor false."""
    return (
        f'annotation {key}="{value}" is not understood: set it to "true" or "false"; '
        "until then the safe choice is taken (no collector, or no host cgroup mount)"
    )


def profile_choice(metadata: Mapping[str, object] | None) -> Choice:
    """Whether a workload opted in to profiling (``bottleneck.dev/profile``), from its metadata."""
    return parse_switch(_annotations(metadata).get(PROFILE_ANNOTATION))


def wants_collector(metadata: Mapping[str, object] | None) -> bool:
    """Profiled, and not opted out of the collector alone (``bottleneck.dev/sidecar: "false"``).

    An invalid ``sidecar`` value injects nothing: a collector the user may have tried to refuse
    costs their pods resources, a missing one costs only some signals.
    """
    annotations = _annotations(metadata)
    if parse_switch(annotations.get(PROFILE_ANNOTATION)) is not Choice.ON:
        return False
    return parse_switch(annotations.get(SIDECAR_ANNOTATION, "true")) is Choice.ON


def wants_host_cgroup(metadata: Mapping[str, object] | None) -> bool:
    """The collector may mount the node's cgroup tree unless ``…/sidecar-host-cgroup`` says otherwise.

    Only an absent annotation or exactly ``"true"`` allows the mount; an invalid value is a refusal.
    """
    return parse_switch(_annotations(metadata).get(HOST_CGROUP_ANNOTATION, "true")) is Choice.ON
