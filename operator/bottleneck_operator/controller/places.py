"""Where a Job's storage and network sit, read from the Kubernetes API: the summary's places beyond nodes.

The metric contract carries a Job's nodes (``kube_pod_info``) and nothing of its storage or fabric,
so those come from the API:

- **storage**: the claims the Job's pod templates mount (:mod:`.pod_templates`), each claim's
  ``spec.storageClassName`` read with one GET in the Job's namespace, plus the classes its
  ephemeral claim templates name. A Job with several claims is placed on every class it mounts,
  as a set: which claim its data comes from is not known, and the hot-spot test only needs the
  class to be among them.
- **fabric** and **rack**: the configured label keys of each of the Job's nodes, one cluster-scoped
  GET per node, made only when a key is configured (the chart grants ``get nodes`` only then). A
  place is named ``key=value``, so two keys never merge their values.

Both are cached (bounded, expiring), so a pass asks only about claims and nodes it has not seen
lately, and at most :data:`LOOKUPS_PER_PASS` of them. A missing object or a refused read is logged
once and leaves that dimension empty for the Jobs concerned: the summary goes on without it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import replace
from typing import Any, Generic, TypeVar

from bottleneck_operator.analysis.cluster import ClusterBook, JobDigest
from bottleneck_operator.controller.pod_templates import NO_CLAIMS, VolumeClaims
from bottleneck_operator.kube import KubeClient, Resource
from bottleneck_operator.kube.errors import KubeError, NotFound, Unauthorized

log = logging.getLogger("bottleneck_operator.operator")

CLAIMS = Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
# Entries kept in each cache: beyond the claims and nodes of a large cluster's week.
CACHE_SIZE = 4096
# A bound claim's class does not change; expiring it only catches a claim recreated under its name.
CLAIM_TTL = 3600.0
# Node labels change when nodes are relabelled or replaced under the same name.
NODE_TTL = 600.0
# A refused read (RBAC) is not tried again for this long: the chart's roles change with an upgrade.
DENIED_TTL = 600.0
# GETs per pass at most: a first pass over a large cluster spreads its reads over a few passes.
LOOKUPS_PER_PASS = 256
# A DNS subdomain: what claim and node names are; anything else is never put in a request path.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")

JobKey = tuple[str, str, str]
K = TypeVar("K")
V = TypeVar("V")


class _Expiring(Generic[K, V]):
    """A bounded map whose entries expire: the least recently stored goes first when full."""

    def __init__(self, size: int, ttl: float) -> None:
        self._size, self._ttl = size, ttl
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K, now: float) -> tuple[bool, V | None]:
        found = self._items.get(key)
        if found is None or found[0] <= now:
            return False, None
        return True, found[1]

    def put(self, key: K, value: V, now: float) -> None:
        self._items[key] = (now + self._ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


NodePlaces = tuple[tuple[str, ...], tuple[str, ...]]  # (racks, fabrics) of one node


class Places:
    """The storage classes, fabrics and racks of the book's Jobs, looked up and cached.

    Args:
        rack_labels, fabric_labels: node label keys that place a node in a rack or on a fabric.
        clock: monotonic seconds, for the caches' expiry.
        size: entries kept in each cache.
    """

    def __init__(
        self,
        *,
        rack_labels: Iterable[str] = (),
        fabric_labels: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
        size: int = CACHE_SIZE,
    ) -> None:
        self.rack_labels, self.fabric_labels = tuple(rack_labels), tuple(fabric_labels)
        self._clock = clock
        self._mounts: dict[JobKey, tuple[str, VolumeClaims]] = {}
        self._classes: _Expiring[tuple[str, str], str] = _Expiring(size, CLAIM_TTL)
        self._nodes: _Expiring[str, NodePlaces] = _Expiring(size, NODE_TTL)
        self._denied: dict[tuple[str, str], float] = {}  # (resource, namespace) -> refused until
        self.lookups = 0  # GETs sent so far

    @property
    def reads_nodes(self) -> bool:
        return bool(self.rack_labels or self.fabric_labels)

    def note(self, key: JobKey, namespace: str, claims: VolumeClaims) -> None:
        """Remember the claims of a Job whose digest was just recorded (called from the pass's threads)."""
        if claims:
            self._mounts[key] = (namespace, claims)
        else:
            self._mounts.pop(key, None)

    async def fill(self, kube: KubeClient, book: ClusterBook, now: float, warned: MutableMapping[str, str]) -> int:
        """Look up what the book's Jobs need and record their digests with every place known.

        Args:
            kube: the operator's client (its table of API uses allows these reads).
            book: the digests; those whose places changed are replaced in it.
            now: the summary's time (the book forgets Jobs older than its lookback).
            warned: what was already logged once (``OperatorState.warned``).

        Returns:
            The number of digests whose places changed.
        """
        digests = book.digests(now)
        keys = {d.key for d in digests}
        for key in [k for k in self._mounts if k not in keys]:  # Jobs the book forgot
            del self._mounts[key]
        await self._look_up(kube, digests, warned)
        t = self._clock()
        changed = [new for d in digests if (new := self._placed(d, t)) is not d]
        book.record(changed)
        return len(changed)

    async def _look_up(self, kube: KubeClient, digests: list[JobDigest], warned: MutableMapping[str, str]) -> None:
        t = self._clock()
        claims: set[tuple[str, str]] = set()
        nodes: set[str] = set()
        for d in digests:
            namespace, mounted = self._mounts.get(d.key, ("", NO_CLAIMS))
            if not self._refused(CLAIMS, namespace, t):
                claims |= {(namespace, c) for c in mounted.claims if not self._classes.get((namespace, c), t)[0]}
            if self.reads_nodes and not self._refused(NODES, "", t):
                nodes |= {n for n in d.locations.get("node", ()) if not self._nodes.get(n, t)[0]}
        wanted = [(CLAIMS, ns, c) for ns, c in sorted(claims) if _NAME.fullmatch(c)]
        wanted += [(NODES, "", n) for n in sorted(nodes) if _NAME.fullmatch(n)]
        wanted = wanted[:LOOKUPS_PER_PASS]
        if not wanted:
            return
        results = await asyncio.gather(*(self._read(kube, *w) for w in wanted))
        self._report(wanted, results, warned)
        failed = [e for e in results if e is not None and not isinstance(e, NotFound | Unauthorized)]
        if failed:  # the API server is unavailable: asked again next pass, one line per pass meanwhile
            log.warning("could not read %d claim(s) or node(s) for the cluster summary: %s", len(failed), failed[0])

    async def _read(self, kube: KubeClient, resource: Resource, namespace: str, name: str) -> KubeError | None:
        """One GET, its answer cached (a missing object as nothing); the error when it failed."""
        self.lookups += 1
        try:
            obj = await kube.get(resource, namespace or None, name)
        except NotFound as exc:
            self._store(resource, namespace, name, None)
            return exc
        except Unauthorized as exc:
            self._denied[(resource.plural, namespace)] = self._clock() + DENIED_TTL
            return exc
        except KubeError as exc:  # unavailable or refused for another reason: asked again next pass
            return exc
        self._store(resource, namespace, name, obj)
        return None

    def _store(self, resource: Resource, namespace: str, name: str, obj: Mapping[str, Any] | None) -> None:
        t = self._clock()
        spec = obj.get("spec") if obj else None
        meta = obj.get("metadata") if obj else None
        if resource is CLAIMS:
            value = spec.get("storageClassName") if isinstance(spec, dict) else None
            self._classes.put((namespace, name), value if isinstance(value, str) else "", t)
            return
        labels = meta.get("labels") if isinstance(meta, dict) else None
        labels = labels if isinstance(labels, dict) else {}
        self._nodes.put(name, (_placed_by(labels, self.rack_labels), _placed_by(labels, self.fabric_labels)), t)

    def _report(
        self, wanted: list[tuple[Resource, str, str]], results: list[KubeError | None], warned: MutableMapping[str, str]
    ) -> None:
        """Log each kind of trouble once (a missing object, a refused read); forget a refusal once reads work."""
        for (resource, namespace, name), error in zip(wanted, results, strict=True):
            what = f"{resource.plural}/{namespace + '/' if namespace else ''}{name}"
            # Permissions are granted per namespace (a namespaced install) or cluster-wide (nodes).
            denied = f"places-denied-{resource.plural}-{namespace}"
            if isinstance(error, NotFound):
                key, message = f"places-missing-{resource.plural}", f"{what} does not exist"
            elif isinstance(error, Unauthorized):
                key = denied
                message = f"reading {what} is not allowed (HTTP {error.status}: the role lacks get {resource.plural})"
            else:
                if error is None:
                    warned.pop(denied, None)
                continue
            if key not in warned:
                warned[key] = message
                # A claim or node gone (a finished Job's claim deleted, a node scaled away) is routine; a
                # refused read is the chart's RBAC or node-label values to fix.
                log.log(
                    logging.WARNING if isinstance(error, Unauthorized) else logging.INFO,
                    "cluster summary: %s; its Jobs' %s stay unknown (said once)",
                    message,
                    "storage classes" if resource is CLAIMS else "fabrics and racks",
                )

    def _refused(self, resource: Resource, namespace: str, now: float) -> bool:
        until = self._denied.get((resource.plural, namespace))
        return until is not None and until > now

    def _placed(self, digest: JobDigest, now: float) -> JobDigest:
        """The digest with its storage, fabric and rack set from what is known (itself when unchanged)."""
        namespace, mounted = self._mounts.get(digest.key, ("", NO_CLAIMS))
        storage = set(mounted.classes)
        for claim in mounted.claims:
            storage.add(self._classes.get((namespace, claim), now)[1] or "")
        racks: set[str] = set()
        fabrics: set[str] = set()
        for node in digest.locations.get("node", ()) if self.reads_nodes else ():
            found = self._nodes.get(node, now)[1]
            if found is not None:
                racks.update(found[0])
                fabrics.update(found[1])
        # What is not known (yet) leaves the digest's own places alone: a digest built with them (the
        # simulator's) keeps them, and one of this pass gets them once its reads are answered.
        locations = dict(digest.locations)
        for dimension, places in (("storage", storage), ("fabric", fabrics), ("rack", racks)):
            if places - {""}:
                locations[dimension] = tuple(sorted(places - {""}))
        if locations == digest.locations:
            return digest
        return replace(digest, locations=locations)


def _placed_by(labels: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{k}={v}" for k in keys if isinstance(v := labels.get(k), str) and v)
