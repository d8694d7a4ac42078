"""An async Kubernetes client for the operator's own objects: lightkube's AsyncClient, dicts in and out.

Objects are plain dicts (the API's JSON), resources are named by :class:`Resource` and reached
through lightkube's generic resources, so a custom resource needs no generated model. Its HTTP is
the project's one library with the shared timeout policy (:mod:`bottleneck_operator.httpclient`).
Failures are :mod:`.errors` classes, under the project's tree (an unreachable or overloaded API
server is an ``Unavailable``); a 401 logs in again once (rotated service-account tokens keep working).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
import msgspec
from lightkube import ApiError, AsyncClient, ConfigError
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import Cluster, User, UserExec
from lightkube.core.selector import build_selector
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.types import PatchType

from bottleneck_operator.httpclient import Policy, async_transport
from bottleneck_operator.kube.credentials import Credentials
from bottleneck_operator.kube.errors import (
    ApiRejected,
    ApiUnavailable,
    CredentialsError,
    KubeError,
    Unauthorized,
    for_status,
)
from bottleneck_operator.kube.selectors import Requirement, lightkube_labels, matches, parse_selector

T = TypeVar("T")
Login = Callable[[], Credentials]
Page = list[dict[str, Any]]  # named here: inside KubeClient, ``list`` is the method
FIELD_MANAGER = "bottleneck-operator"
# Objects' metadata alone where the server can (every kube-apiserver since 1.15), whole objects where
# it cannot: a server that does not know the first media type answers the second (client-go's
# metadata client asks the same way).
METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
METADATA_KIND = "PartialObjectMetadata"


@dataclass(frozen=True)
class Resource:
    """A resource type, e.g. ``Resource("bottleneck.dev", "v1alpha1", "BottleneckReport", "bottleneckreports")``.

    A cluster-scoped one (``namespaced=False``) is reached with ``namespace=None``.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True


async def _next_page(objects: AsyncIterator[Any], limit: int) -> list[dict[str, Any]]:
    page: list[dict[str, Any]] = []
    async for obj in objects:
        page.append(_to_dict(obj))
        if len(page) >= limit:
            break
        if len(page) % 10 == 0:
            # a page of large objects is converted one by one: let the admissions waiting meanwhile run
            await asyncio.sleep(0)
    return page


@functools.cache
def _generic(resource: Resource) -> Any:
    make = create_namespaced_resource if resource.namespaced else create_global_resource
    return make(resource.group, resource.version, resource.kind, resource.plural)


def _to_dict(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    return data


_LIBRARY_ERRORS = (ApiError, httpx2.HTTPError, ConfigError, KeyError, ValueError, OSError, TimeoutError)


def _translate(what: str, exc: BaseException) -> KubeError:
    """A library's failure as this package's error class."""
    if isinstance(exc, ApiError):
        return for_status(exc.status.code or 0, f"{what}: HTTP {exc.status.code}: {exc.status.message}")
    if isinstance(exc, httpx2.HTTPStatusError):  # an error body that is not a Kubernetes Status
        code = exc.response.status_code
        return for_status(code, f"{what}: HTTP {code}: {exc.response.text[:300]}")
    if isinstance(exc, KeyError) and str(exc.args[0] if exc.args else "").lower() == "content-type":
        # an error answer without a Content-Type (a proxy's 502): the library cannot read it
        return ApiUnavailable(f"{what}: an unreadable answer (no Content-Type)")
    if isinstance(exc, ConfigError | json.JSONDecodeError | KeyError):
        # An exec plugin that failed or printed no ExecCredential, or a token file gone.
        return CredentialsError(f"{what}: cannot log in: {exc}")
    if isinstance(exc, ValueError):
        return ApiUnavailable(f"{what}: an unreadable answer ({type(exc).__name__}: {exc})")
    return ApiUnavailable(f"{what}: {type(exc).__name__}: {exc}")


class KubeClient:
    """Create, read, merge-patch, list and delete namespaced objects.

    Args:
        login: returns fresh :class:`Credentials`; called lazily, and again once after a 401.
        concurrency: at most this many requests in flight.
        timeout: seconds per request (None: none, for watches).
        allowed: the (API group, resource[/status], verb) triples this client may call; a call outside
            them raises :class:`ApiRejected` before it is sent. None: any (the test and demo drivers).
    """

    def __init__(
        self,
        login: Login,
        *,
        concurrency: int = 32,
        timeout: float | None = 30.0,
        allowed: Collection[tuple[str, str, str]] | None = None,
    ) -> None:
        self._allowed = None if allowed is None else frozenset(allowed)
        self._login = login
        self._client: AsyncClient | None = None
        self._sem = asyncio.Semaphore(concurrency)
        self._connecting = asyncio.Lock()
        self._policy = Policy(timeout=timeout)
        self.requests = 0

    async def _connect(self) -> AsyncClient:
        async with self._connecting:  # many first requests at once: one login, one client
            if self._client is None:
                self._client = await asyncio.to_thread(self._open)
            return self._client

    def _open(self) -> AsyncClient:
        try:
            creds = self._login()
        except KubeError:
            raise
        except Exception as exc:  # a login library's own errors: wrap them
            raise CredentialsError(f"cannot log in to the Kubernetes API: {exc}") from exc
        try:
            user = User(
                token=creds.token,
                token_file=creds.token_file,
                exec=msgspec.convert(creds.exec_config, UserExec) if creds.exec_config else None,
                username=creds.username,
                password=creds.password,
            )
        except msgspec.ValidationError as exc:
            raise CredentialsError(f"unusable exec plugin settings in the kubeconfig: {exc}") from exc
        config = KubeConfig.from_one(cluster=Cluster(server=creds.server), user=user)
        # Our own transport carries the TLS context (built in memory); lightkube's would write
        # inline certificates to temporary files.
        transport = async_transport(self._policy, verify=creds.ssl_context())
        try:
            return AsyncClient(
                config=config,
                timeout=self._policy.timeouts(),
                field_manager=FIELD_MANAGER,
                trust_env=False,
                transport=transport,
            )
        except ConfigError as exc:
            raise CredentialsError(f"unusable Kubernetes credentials: {exc}") from exc

    async def close(self) -> None:
        """Close the connection pool (idempotent)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _call(self, what: str, call: Callable[[AsyncClient], Awaitable[T]], *, retried: bool = False) -> T:
        client = await self._connect()
        async with self._sem:
            self.requests += 1
            try:
                return await call(client)
            except _LIBRARY_ERRORS as exc:
                error, cause = _translate(what, exc), exc
        if isinstance(error, Unauthorized) and error.status == 401 and not retried:
            await self.close()  # the token may have rotated: log in again, once
            return await self._call(what, call, retried=True)
        raise error from cause

    def _permit(self, resource: Resource, verb: str, *, status: bool = False) -> None:
        name = f"{resource.plural}/status" if status else resource.plural
        if self._allowed is not None and (resource.group, name, verb) not in self._allowed:
            # The operator's RBAC is built from the same table: such a call would be a 403 in a cluster.
            raise ApiRejected(f"{verb} {resource.group or 'core'}/{name}: not among this client's declared API uses")

    async def create(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object; :class:`Conflict` when it exists."""
        self._permit(resource, "create")
        data = dict(body)
        data["metadata"] = {**(data.get("metadata") or {}), **({"namespace": namespace} if namespace else {})}
        obj = _generic(resource).from_dict(data)
        created = await self._call(f"create {resource.plural} {namespace}", lambda c: c.create(obj))
        return _to_dict(created)

    async def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        """The object; :class:`NotFound` when it does not exist."""
        self._permit(resource, "get")
        got = await self._call(
            f"get {resource.plural} {namespace}/{name}", lambda c: c.get(_generic(resource), name, namespace=namespace)
        )
        return _to_dict(got)

    async def merge_patch(
        self, resource: Resource, namespace: str | None, name: str, patch: Mapping[str, Any], *, status: bool = False
    ) -> dict[str, Any]:
        """A JSON merge patch of the object (``status``: through the status subresource)."""
        self._permit(resource, "patch", status=status)
        res = _generic(resource).Status if status else _generic(resource)
        what = f"patch {resource.plural}{'/status' if status else ''} {namespace}/{name}"
        patched = await self._call(
            what, lambda c: c.patch(res, name, dict(patch), namespace=namespace, patch_type=PatchType.MERGE)
        )
        return _to_dict(patched)

    async def delete(self, resource: Resource, namespace: str, name: str) -> None:
        """Delete an object; :class:`NotFound` when it was already gone."""
        self._permit(resource, "delete")
        await self._call(
            f"delete {resource.plural} {namespace}/{name}",
            lambda c: c.delete(_generic(resource), name, namespace=namespace),
        )

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        selector: str = "",
    ) -> list[dict[str, Any]]:
        """Objects in one namespace (None: all of them) matching ``labels`` and a kubectl ``selector``.

        Raises:
            SelectorError: the selector is not valid (before any request).
        """
        self._permit(resource, "list")
        wanted = parse_selector(selector) + tuple(Requirement(k, "=", (v,)) for k, v in (labels or {}).items())

        async def collect(c: AsyncClient) -> list[dict[str, Any]]:
            found = c.list(_generic(resource), namespace=namespace or "*", labels=lightkube_labels(wanted))
            return [_to_dict(obj) async for obj in found]

        got = await self._call(f"list {resource.plural} {namespace or '*'}", collect)
        # The server filters; matching again costs nothing and holds where a server did not.
        return [o for o in got if matches(wanted, (o.get("metadata") or {}).get("labels"))]

    async def watch(
        self, resource: Resource, namespace: str | None = None, *, selector: str = ""
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(event type, object) as the API server streams them, until the caller stops iterating.

        The watch starts at the current state (an ADDED event for each object that exists) and is
        resumed by lightkube when the server closes it.
        """
        self._permit(resource, "watch")
        wanted = parse_selector(selector)
        client = await self._connect()
        what = f"watch {resource.plural} {namespace or '*'}"
        stream = client.watch(_generic(resource), namespace=namespace or "*", labels=lightkube_labels(wanted))
        try:
            async for event, obj in stream:
                data = _to_dict(obj)
                if matches(wanted, (data.get("metadata") or {}).get("labels")):
                    yield str(event), data
        except _LIBRARY_ERRORS as exc:
            raise _translate(what, exc) from exc

    async def list_pages(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        limit: int,
        metadata_only: bool = False,
    ) -> AsyncIterator[Page]:
        """Objects as :meth:`list`, in pages of at most ``limit`` (LIST with ``limit``/``continue``).

        Only one page is held at a time: the caller deals with it before the next is asked for.
        ``metadata_only``: ask for each object's metadata alone (kind ``PartialObjectMetadata``); a
        server that cannot serve that answers whole objects, so callers read both.
        """
        self._permit(resource, "list")
        client = await self._connect()
        if metadata_only:
            found = _metadata_list(client, _generic(resource), namespace or "*", {**(labels or {})}, limit)
        else:
            found = client.list(
                _generic(resource), namespace=namespace or "*", labels=dict(labels or {}), chunk_size=limit
            )
        objects = found.__aiter__()
        while True:
            page = await self._call(f"list {resource.plural} {namespace or '*'}", lambda _: _next_page(objects, limit))
            if not page:
                return
            yield page


def _metadata_list(client: AsyncClient, res: Any, namespace: str, labels: dict[str, Any], limit: int) -> Any:
    """lightkube's paged LIST with the metadata-only Accept header (its ``list`` takes no headers)."""
    params = {"limit": str(limit), **({"labelSelector": build_selector(labels)} if labels else {})}
    generic = client._client  # the request builder behind AsyncClient.list: the same paging and errors
    request = generic.prepare_request("list", res=res, namespace=namespace, params=params)
    request.headers = {"Accept": METADATA_ACCEPT}
    return generic.list(request)
