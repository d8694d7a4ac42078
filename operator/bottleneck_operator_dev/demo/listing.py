"""LIST answered as a kube-apiserver answers it: in pages, and as metadata alone when asked.

kmock answers a LIST with every object at once, copying each one. An API server answers ``limit``
with one page and a ``continue`` token (in key order, the token the last key served, so objects
deleted between pages skip nothing), and ``Accept: application/json;as=PartialObjectMetadataList;
g=meta.k8s.io;v=v1`` with each object's metadata alone. Both are served here, at a cost that grows
with the page rather than with every object held, so that a client that pages (the retention
sweep) is served as a cluster would serve it, and the emulator's own work does not stand in for the
client's in the benchmarks that run both on one machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

METADATA_LIST = "PartialObjectMetadataList"


def wants_metadata(request: Any) -> bool:
    """Whether the request's preferred media type is the metadata-only list."""
    headers = getattr(request, "headers", None) or {}
    accept = next((str(v) for k, v in headers.items() if str(k).lower() == "accept"), "")
    first = accept.split(",")[0].replace(" ", "")
    return f"as={METADATA_LIST}" in first and "g=meta.k8s.io" in first


def metadata_only(listed: Mapping[str, Any]) -> dict[str, Any]:
    """A list as the API server's metadata-only answer: each object's metadata, nothing else."""
    kind = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata"}
    items = [{**kind, "metadata": i.get("metadata") or {}} for i in listed.get("items") or []]
    return {**listed, "apiVersion": "meta.k8s.io/v1", "kind": METADATA_LIST, "items": items}


def page(
    objects: Any, keys: Iterable[Any], resource: Any, namespace: str | None, limit: int, after: str
) -> tuple[list[dict[str, Any]], str]:
    """The next page of ``resource`` objects after the key ``after``, and the token for the one after it
    ("" after the last page, as the API server's empty ``continue``).

    Args:
        objects: kmock's store, by (resource, namespace, name); only the page's objects are read.
        keys: the store's keys.
    """
    found = sorted(
        (f"{ns or ''}/{name}", ns, name)
        for res, ns, name in keys
        if res == resource and (namespace is None or ns == namespace)
    )
    items: list[dict[str, Any]] = []
    for text, ns, name in found:
        if text <= after:
            continue
        obj = objects[resource, ns, name]
        if obj.deleted:
            continue
        if len(items) == limit:
            return items, after
        items.append(obj.raw)
        after = text
    return items, ""
