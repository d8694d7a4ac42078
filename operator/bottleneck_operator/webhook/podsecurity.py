"""What the namespace's Pod Security level admits of the collector.

Pod Security admission only warns when a Job's template breaks the namespace's ``enforce`` level,
then rejects every pod the Job creates: injecting the host cgroup mount (a hostPath volume) into a
Job in a ``baseline`` or ``restricted`` namespace would break the Job it was meant to profile. The
webhook reads the namespace's ``pod-security.kubernetes.io/enforce`` label and injects only what
that level admits: the collector with the host mount under ``privileged``; the collector without
it under ``baseline``; under ``restricted`` the collector without it too, provided the container
meets the restricted profile's container rules (checked here, not assumed), else no collector at all.

An unlabelled namespace takes the cluster's default level. Kubernetes' own default is
``privileged``, but clusters set another in the API server's AdmissionConfiguration, or ban
hostPath with Kyverno or Gatekeeper, none of which a namespace label shows: the default is the
setting ``pod_security_default_level`` (the chart's ``podSecurity.defaultLevel``), ``baseline``
unless the cluster's owner says otherwise, so the mount is never assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneck_operator.contract.names import POD_SECURITY_ENFORCE_LABEL

ENFORCE_LABEL = POD_SECURITY_ENFORCE_LABEL
LEVELS = ("privileged", "baseline", "restricted")
DEFAULT_LEVEL = "baseline"


def enforce_level(labels: Mapping[str, Any] | None, default: str = DEFAULT_LEVEL) -> str:
    """The namespace's effective enforced level.

    Args:
        labels: the namespace's labels.
        default: the cluster's level for a namespace without the label.

    Returns:
        One of :data:`LEVELS`. An unknown value is taken as "restricted" (the API server would
        reject such a namespace label, so this is only a precaution).
    """
    value = str((labels or {}).get(ENFORCE_LABEL) or default).strip().lower()
    return value if value in LEVELS else "restricted"


def allows_host_path(level: str) -> bool:
    """Whether pods may mount hostPath volumes under this level (only ``privileged`` allows them)."""
    return level == "privileged"


def restricted_violations(container: Mapping[str, Any]) -> list[str]:
    """The restricted profile's container rules that ``container`` breaks (empty: it meets them).

    Checked on the container's own securityContext: runAsNonRoot, no privilege escalation, all
    capabilities dropped (none added but NET_BIND_SERVICE), the RuntimeDefault or Localhost seccomp
    profile, not privileged.
    """
    sc = container.get("securityContext")
    sc = sc if isinstance(sc, Mapping) else {}
    out: list[str] = []
    if sc.get("runAsNonRoot") is not True or sc.get("runAsUser") == 0:
        out.append("runAsNonRoot")
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append("allowPrivilegeEscalation=false")
    if sc.get("privileged") is True:
        out.append("privileged")
    caps = sc.get("capabilities")
    caps = caps if isinstance(caps, Mapping) else {}
    if "ALL" not in (caps.get("drop") or []):
        out.append("capabilities drop ALL")
    if any(c != "NET_BIND_SERVICE" for c in caps.get("add") or []):
        out.append("capabilities add")
    seccomp = sc.get("seccompProfile")
    if not isinstance(seccomp, Mapping) or seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
        out.append("seccompProfile RuntimeDefault")
    return out


@dataclass(frozen=True)
class Admitted:
    """What may be injected under a level.

    Attributes:
        collector: inject the collector at all.
        host_cgroup: with the host cgroup mount.
        note: why less than asked is injected (for the Event and the log); None when nothing is cut.
    """

    collector: bool
    host_cgroup: bool
    note: str | None = None


def admitted(level: str, *, host_cgroup: bool, container: Mapping[str, Any]) -> Admitted:
    """What the level admits of a collector asked for with (or without) the host cgroup mount.

    Args:
        level: the namespace's enforced level (see :func:`enforce_level`).
        host_cgroup: the mount is wanted (operator setting and the workload's annotation).
        container: the collector container as it would be injected (without the mount).
    """
    if allows_host_path(level):
        return Admitted(True, host_cgroup)
    cut = (
        f"the collector runs without the host cgroup mount: Pod Security level {level!r} forbids hostPath volumes"
        if host_cgroup
        else None
    )
    if level == "restricted":
        broken = restricted_violations(container)
        if broken:
            return Admitted(
                False,
                False,
                "no collector injected: Pod Security level 'restricted' would reject it "
                f"({', '.join(broken)}); the workload is profiled from the other exporters only",
            )
    return Admitted(True, False, cut)
