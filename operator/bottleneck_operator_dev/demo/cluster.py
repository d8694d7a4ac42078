"""An in-process Kubernetes API for the demo, the tests and the benchmark: kmock's emulator.

kmock's :class:`KubernetesEmulator` stores objects and serves list/watch/get/create/patch/delete.
What a real API server adds on create (a uid, creationTimestamp, resourceVersion, a name from
``generateName``, which kopf uses for Events) is stamped here, as kmock's documentation invites
("inherit and implement for your cases"). It runs on its own thread and event loop so that
synchronous code (the demo's driver, pytest, a ``KopfRunner``) can talk to it over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
import threading
import uuid
from collections.abc import Coroutine, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from aiohttp import web

from bottleneck_operator.errors import BottleneckError, Unavailable
from bottleneck_operator.kube import Credentials, KubeClient, KubeError, NotFound, Resource
from bottleneck_operator_dev.demo import listing

T = TypeVar("T")

try:
    import kmock
except ImportError as exc:  # kmock is an optional extra: the production image goes without it
    raise BottleneckError(
        "the demo's Kubernetes API emulator needs kmock: pip install 'bottleneck-operator[demo]' (or run `make demo`)"
    ) from exc

JOBS = "batch/v1/jobs"
EVENTS = "v1/events"
PODS = "v1/pods"
REPORTS = "bottleneck.dev/v1alpha1/bottleneckreports"
SUMMARIES = "bottleneck.dev/v1alpha1/clusterbottlenecksummaries"
NAMESPACES = "v1/namespaces"
CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
CLAIMS = "v1/persistentvolumeclaims"
NODES = "v1/nodes"

# kopf waits for namespaces and CRDs to be served (even cluster-wide), so they are declared too.
_RESOURCES: dict[str, dict[str, Any]] = {
    NAMESPACES: {"kind": "Namespace", "singular": "namespace", "namespaced": False, "shortnames": {"ns"}},
    CRDS: {"kind": "CustomResourceDefinition", "singular": "customresourcedefinition", "namespaced": False},
    JOBS: {"kind": "Job", "singular": "job", "namespaced": True, "subresources": {"status"}},
    EVENTS: {"kind": "Event", "singular": "event", "namespaced": True, "shortnames": {"ev"}},
    PODS: {"kind": "Pod", "singular": "pod", "namespaced": True, "subresources": {"status"}},
    REPORTS: {
        "kind": "BottleneckReport",
        "singular": "bottleneckreport",
        "namespaced": True,
        "shortnames": {"bnr"},
        "subresources": {"status"},
    },
    # What the cluster summary reads for its storage classes, fabrics and racks (controller.places).
    CLAIMS: {"kind": "PersistentVolumeClaim", "singular": "persistentvolumeclaim", "namespaced": True},
    NODES: {"kind": "Node", "singular": "node", "namespaced": False},
    SUMMARIES: {
        "kind": "ClusterBottleneckSummary",
        "singular": "clusterbottlenecksummary",
        "namespaced": False,
        "shortnames": {"cbs"},
        "subresources": {"status"},
    },
}
_KEPT_REQUESTS = 4
_VERBS = {"list", "watch", "get", "create", "patch", "update", "delete"}


def _now() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ClusterEmulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock's emulator plus the metadata an API server stamps on writes."""

    _versions = itertools.count(1)
    # Seconds each read of one object waits before it is answered: a slow API server, for the tests
    # and benchmarks of what must stay inside a deadline (the admission webhook's).
    read_latency = 0.0
    # (resource plural, namespace, name) -> reads of that object so far.
    reads: dict[tuple[str, str, str], int]
    # Whether a LIST that asks for metadata alone (``Accept: ...;as=PartialObjectMetadataList``) gets
    # it, as from a kube-apiserver; off: whole objects, as from a server that cannot.
    partial_metadata = True

    def _forget_old_requests(self) -> None:
        # kmock keeps every request for test assertions and matches each new one against that
        # history, so a request costs O(requests so far): 1,000 Jobs would slow it to a crawl.
        # Nothing here asserts on old requests, so only a short tail is kept.
        for holder in (self, *self._payloads):
            kept: list[Any] = getattr(holder, "_requests", [])
            if len(kept) > 2 * _KEPT_REQUESTS:
                del kept[:-_KEPT_REQUESTS]

    async def __call__(self, raw_request: web.BaseRequest) -> web.StreamResponse:
        # kmock 0.8 cannot parse the cluster-scoped path /api/v1/namespaces, which kopf lists and
        # watches when it runs for given namespaces: serve it here, from the objects' namespaces.
        if raw_request.path.rstrip("/") == "/api/v1/namespaces" and raw_request.method == "GET":
            return await self._serve_namespaces(raw_request)
        response: web.StreamResponse = await super().__call__(raw_request)
        return response

    # kmock finds the object of a GET or PATCH by scanning every object it holds: with 2,000 Jobs
    # and reports that scan was most of the emulator's CPU. Its store is a dict by (resource,
    # namespace, name), so one object is looked up directly; anything else takes kmock's path.
    async def _serve_fetch(self, request: Any) -> Any:
        if request.resource is not None and request.name:
            key = (str(request.resource.plural), str(request.namespace or ""), str(request.name))
            self.reads[key] = self.reads.get(key, 0) + 1
        if self.read_latency > 0:
            await asyncio.sleep(self.read_latency)
        obj = self._lookup(request)
        if obj is None:
            return await super()._serve_fetch(request)
        if obj.deleted:
            raise kmock.KubernetesObjectNotFoundError()
        return obj.raw

    async def _serve_update(self, request: Any) -> Any:
        obj = self._lookup(request)
        return obj.last.raw if obj is not None else await super()._serve_update(request)

    async def _serve_list(self, request: Any) -> Any:
        # Paged and metadata-only LISTs as a kube-apiserver serves them (see .listing).
        params = getattr(request, "params", None) or {}
        limit = int(params.get("limit") or 0)
        if limit > 0 and request.resource is not None and request.name is None:
            after = params.get("continue") or ""
            items, token = listing.page(
                self.objects, list(self.objects), request.resource, request.namespace, limit, after
            )
            listed: Any = {"metadata": {"resourceVersion": "...", "continue": token}, "items": items}
        else:
            listed = await super()._serve_list(request)
        if self.partial_metadata and isinstance(listed, dict) and listing.wants_metadata(request):
            listed = listing.metadata_only(listed)
        return listed

    def _lookup(self, request: Any) -> Any:
        if request.resource is None or request.namespace is None or request.name is None:
            return None
        key = (request.resource, request.namespace, request.name)
        return self.objects[key] if key in self.objects else None  # noqa: SIM401 (kmock's array has no .get)

    def _namespace_objects(self) -> list[dict[str, Any]]:
        names = {"default", *(ns for _, ns, _ in self.objects if ns)}
        return [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "resourceVersion": "1"}}
            for n in sorted(names)
        ]

    async def _serve_namespaces(self, raw_request: web.BaseRequest) -> web.StreamResponse:
        items = self._namespace_objects()
        if raw_request.query.get("watch") != "true":
            return web.json_response(
                {"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "1"}, "items": items}
            )
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(raw_request)
        for item in items:
            await response.write(json.dumps({"type": "ADDED", "object": item}).encode() + b"\n")
        # Namespaces do not change in these runs: hold the stream until the client goes away.
        while raw_request.transport is not None and not raw_request.transport.is_closing():
            await asyncio.sleep(1.0)
        return response

    async def _handle(self, request: Any) -> Any:
        self._forget_old_requests()
        data = request.data
        if request.resource is not None and isinstance(data, dict):
            if request.action == kmock.action.CREATE:
                meta = data.setdefault("metadata", {})
                if not meta.get("name") and meta.get("generateName"):
                    meta["name"] = f"{meta['generateName']}{secrets.token_hex(4)}"
                if request.namespace:
                    meta.setdefault("namespace", request.namespace)
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", _now())
                meta["resourceVersion"] = str(next(self._versions))
                meta.setdefault("generation", 1)
            elif request.action == kmock.action.UPDATE:
                data.setdefault("metadata", {})["resourceVersion"] = str(next(self._versions))
        response = await super()._handle(request)
        if request.action == kmock.action.UPDATE and request.name:
            # kmock keeps every version of an object; reports patched on every pass need only the last.
            try:
                history = self.objects[request.resource, request.namespace, request.name].history
                if len(history) > 4:
                    del history[:-2]
            except (KeyError, TypeError, ValueError):
                pass
        return response


def kubeconfig_text(server: str) -> str:
    """A kubeconfig pointing at ``server`` (plain HTTP, a dummy token)."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": server}}],
            "users": [{"name": "emulator", "user": {"token": "emulator"}}],
            "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "emulator"}}],
            "current-context": "emulator",
        },
        indent=2,
    )


class ClusterError(KubeError, Unavailable):
    """The emulator could not be started or reached."""


class LocalCluster:
    """The emulator on 127.0.0.1:<free port>, on a background thread, with a small sync client.

    Use as a context manager; ``url`` is the API server's address, ``write_kubeconfig(path)``
    writes a kubeconfig for kopf and the operator's client.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="kube-emulator", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.url = ""
        self.emulator: ClusterEmulator | None = None
        self._client: KubeClient | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        emulator = ClusterEmulator()
        emulator.reads = {}
        for key, info in _RESOURCES.items():
            emulator.resources[key] = kmock.ResourceInfo(verbs=_VERBS, **info)
        async with emulator, kmock.Server(emulator) as server:
            self.emulator = emulator
            self.url = str(server.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()
            if self._client is not None:
                await self._client.close()

    def start(self) -> LocalCluster:
        """Start the emulator; returns when it listens."""
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._error is not None or not self.url:
            raise ClusterError(f"the Kubernetes emulator did not start: {self._error}")
        return self

    def stop(self) -> None:
        """Stop the emulator and its thread (idempotent)."""
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def write_kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig for this emulator; returns the path."""
        path.write_text(kubeconfig_text(self.url))
        return path

    # --- a small synchronous client (the driver side: demo, tests, benchmark): the operator's own
    # async Kubernetes client, run on the emulator's loop.

    def _kube(self) -> KubeClient:
        if self._client is None:
            url = self.url
            self._client = KubeClient(lambda: Credentials(server=url, token="emulator"))  # noqa: S106 - any token
        return self._client

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if not self._thread.is_alive():
            coro.close()
            raise ClusterError("the Kubernetes emulator is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    def create(self, resource: str, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object; returns it as stored."""
        return self._call(self._kube().create(_resource(resource), namespace, body))

    def patch(
        self, resource: str, namespace: str | None, name: str, patch: Mapping[str, Any], sub: str | None = None
    ) -> Any:
        """Merge-patch an object (or its status with ``sub="status"``)."""
        kube = self._kube()
        return self._call(kube.merge_patch(_resource(resource), namespace, name, patch, status=sub == "status"))

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One object, or None."""
        try:
            return self._call(self._kube().get(_resource(resource), namespace, name))
        except NotFound:
            return None

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """All objects of a resource (in one namespace or all)."""
        return self._call(self._kube().list(_resource(resource), namespace))

    def delete(self, resource: str, namespace: str, name: str) -> None:
        """Delete an object (no error when it is already gone)."""
        with contextlib.suppress(NotFound):
            self._call(self._kube().delete(_resource(resource), namespace, name))


def _resource(name: str) -> Resource:
    """A resource of the emulator ("batch/v1/jobs") for the client (cluster-scoped: namespace None)."""
    group_version, plural = name.rsplit("/", 1)
    group, _, version = group_version.rpartition("/")
    info = _RESOURCES[name]
    return Resource(group, version, str(info["kind"]), plural, namespaced=bool(info["namespaced"]))


def job_body(
    namespace: str,
    name: str,
    *,
    start: float | None,
    end: float | None = None,
    failed: bool = False,
    profile: str | None = "true",
    uid: str | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job as the Job controller would show it (started, maybe finished).

    Args:
        namespace, name: the Job's identity.
        start: ``status.startTime`` (unix seconds), None for a Job that has not started.
        end: when it finished; None while it runs.
        failed: it ended Failed rather than Complete.
        profile: the ``bottleneck.dev/profile`` annotation's value (None: no annotation).
        uid: a fixed uid (default: the API stamps one).
    """
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if profile is not None:
        meta["annotations"] = {"bottleneck.dev/profile": profile}
    if uid:
        meta["uid"] = uid
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [{"name": "train", "image": "trainer"}]}}},
        "status": job_status(start=start, end=end, failed=failed),
    }
    return body


def job_status(*, start: float | None, end: float | None = None, failed: bool = False) -> dict[str, Any]:
    """The ``.status`` of a Job that started at ``start`` and, if ``end`` is given, has ended."""

    def ts(t: float) -> str:
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    status: dict[str, Any] = {}
    if start is not None:
        status["startTime"] = ts(start)
        status["active"] = 1
    if end is not None:
        status["active"] = 0
        kind = "Failed" if failed else "Complete"
        status["conditions"] = [{"type": kind, "status": "True", "lastTransitionTime": ts(end)}]
        if failed:
            status["failed"] = 1
        else:
            status["succeeded"] = 1
            status["completionTime"] = ts(end)
    return status
