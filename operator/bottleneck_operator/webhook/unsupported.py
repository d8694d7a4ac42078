"""``/notice-unsupported``: a Warning Event on an annotated object of a kind the operator does not profile.

Annotating a Deployment, a CronJob or a Volcano Job with ``bottleneck.dev/profile: "true"`` would
otherwise do nothing at all, silently. The chart sends the admission of the kinds people commonly
annotate by mistake (:data:`WATCHED`) to this endpoint; an object that carries the annotation gets
one Warning Event (``UnsupportedWorkload``) naming the kinds that are profiled and, where one
exists, the way to profile what it runs. The object is always admitted unchanged, and nothing is
posted for a dry run (``sideEffects: NoneOnDryRun``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from bottleneck_operator.contract.names import PROFILE_ANNOTATION
from bottleneck_operator.controller.workloads import KINDS

HANDLER_ID = "notice-unsupported"
REASON = "UnsupportedWorkload"
Post = Callable[[dict[str, Any], str, str, str], None]

# (group, version, plural): the kinds the chart routes here. A kind whose API a cluster does not
# serve is simply never admitted.
WATCHED: tuple[tuple[str, str, str], ...] = (
    ("apps", "v1", "deployments"),
    ("apps", "v1", "statefulsets"),
    ("batch", "v1", "cronjobs"),
    ("kubeflow.org", "v1", "tfjobs"),
    ("kubeflow.org", "v1", "xgboostjobs"),
    ("kubeflow.org", "v1", "paddlejobs"),
    ("kubeflow.org", "v1", "jaxjobs"),
    ("batch.volcano.sh", "v1alpha1", "jobs"),
    ("ray.io", "v1", "rayclusters"),
    ("ray.io", "v1", "rayservices"),
    ("argoproj.io", "v1alpha1", "workflows"),
)
# What to do instead, for the kinds where there is a way.
_HINTS = {
    "CronJob": "annotate spec.jobTemplate.metadata instead, so that each Job it creates is profiled",
    "RayCluster": "run the work as a RayJob and annotate the RayJob",
    "RayService": "run the work as a RayJob and annotate the RayJob",
    "StatefulSet": "a LeaderWorkerSet is profiled; a plain StatefulSet is not",
}
_posted: set[tuple[str, str, str]] = set()
_POSTED_LIMIT = 10_000
log = logging.getLogger(__name__)


def supported_kinds() -> list[str]:
    """The kinds the operator profiles, in the order the docs list them."""
    return list(dict.fromkeys(k.kind for k in KINDS))


def message(kind: str) -> str:
    """The Event's message for an annotated object of ``kind``."""
    text = (
        f"{PROFILE_ANNOTATION} is set on this {kind}, which bottleneck-operator does not profile: no report "
        f"will be made. Profiled kinds: {', '.join(supported_kinds())}"
    )
    hint = _HINTS.get(kind)
    return f"{text}; {hint}" if hint else text


def notice(body: Mapping[str, Any], post: Post | None, *, namespace: str | None = None, dryrun: bool = False) -> bool:
    """Post the Warning Event when the object carries the profile annotation; True when posted.

    Once per object (namespace, kind, name) for as long as the operator runs, so updates to an
    annotated Deployment do not repeat it.
    """
    meta = body.get("metadata")
    if dryrun or post is None or not isinstance(meta, Mapping):
        return False
    annotations = meta.get("annotations")
    if not isinstance(annotations, Mapping) or PROFILE_ANNOTATION not in annotations:
        return False
    kind, name = str(body.get("kind") or ""), str(meta.get("name") or "")
    namespace = namespace or str(meta.get("namespace") or "")
    key = (namespace, kind, name)
    if not kind or not name or key in _posted:
        return False
    if len(_posted) >= _POSTED_LIMIT:
        _posted.clear()  # a bound on memory; at worst an Event is posted again
    _posted.add(key)
    target_meta = {"name": name, "namespace": namespace, **({"uid": meta["uid"]} if meta.get("uid") else {})}
    target = {"apiVersion": str(body.get("apiVersion") or ""), "kind": kind, "metadata": target_meta}
    try:
        post(target, "Warning", REASON, message(kind))
    except Exception:  # an Event is a courtesy: never fail the admission for it
        log.debug("could not post the Event", exc_info=True)
        return False
    log.warning("%s %s/%s: %s", kind, namespace, name, message(kind))
    return True
