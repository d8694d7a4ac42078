"""An async Kubernetes client for the operator's own objects: lightkube's AsyncClient, dicts in and out.

Objects are plain dicts (the API's JSON), resources are named by :class:`Resource` and reached
through lightkube's generic resources, so a custom resource needs no generated model. Failures are
:mod:`.errors` classes; a 401 logs in again once (rotated service-account tokens keep working).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
from lightkube import ApiError, AsyncClient, ConfigError
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from bottleneck_operator.kube.credentials import Credentials
from bottleneck_operator.kube.errors import ApiUnavailable, CredentialsError, KubeError, Unauthorized, for_status

T = TypeVar("T")
Login = Callable[[], Credentials]
Page = list[dict[str, Any]]  # named here: inside KubeClient, ``list`` is the method
FIELD_MANAGER = "bottleneck-operator"


@dataclass(frozen=True)
class Resource:
    """A namespaced resource type, e.g. ``Resource("bottleneck.dev", "v1alpha1", "BottleneckReport", "bottleneckreports")``."""

    group: str
    version: str
    kind: str
    plural: str


async def _next_page(objects: AsyncIterator[Any], limit: int) -> list[dict[str, Any]]:
    page: list[dict[str, Any]] = []
    async for obj in objects:
        page.append(_to_dict(obj))
        if len(page) >= limit:
            break
    return page


@functools.cache
def _generic(resource: Resource) -> Any:
    return create_namespaced_resource(resource.group, resource.version, resource.kind, resource.plural)


def _to_dict(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    return data


class KubeClient:
    """Create, read, merge-patch, list and delete namespaced objects.

    Args:
        login: returns fresh :class:`Credentials`; called lazily, and again once after a 401.
        concurrency: at most this many requests in flight.
        timeout: seconds per request.
    """

    def __init__(self, login: Login, *, concurrency: int = 32, timeout: float = 30.0) -> None:
        self._login = login
        self._client: AsyncClient | None = None
        self._sem = asyncio.Semaphore(concurrency)
        self._connecting = asyncio.Lock()
        self._timeout = timeout
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
        user = User(token=creds.token, username=creds.username, password=creds.password)
        config = KubeConfig.from_one(cluster=Cluster(server=creds.server), user=user)
        # Our own transport carries the TLS context (built in memory); lightkube's would write
        # inline certificates to temporary files.
        transport = httpx2.AsyncHTTPTransport(verify=creds.ssl_context(), limits=httpx2.Limits(max_connections=64))
        try:
            return AsyncClient(
                config=config,
                timeout=httpx2.Timeout(self._timeout),
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
            except ApiError as exc:
                error = for_status(exc.status.code or 0, f"{what}: HTTP {exc.status.code}: {exc.status.message}")
                cause: BaseException = exc
            except httpx2.HTTPStatusError as exc:  # an error body that is not a Kubernetes Status
                code = exc.response.status_code
                error, cause = for_status(code, f"{what}: HTTP {code}: {exc.response.text[:300]}"), exc
            except (httpx2.HTTPError, OSError, TimeoutError) as exc:
                error, cause = ApiUnavailable(f"{what}: {type(exc).__name__}: {exc}"), exc
            except (KeyError, ValueError) as exc:  # an answer the client cannot read (an error without Content-Type)
                error, cause = ApiUnavailable(f"{what}: an unreadable answer ({type(exc).__name__}: {exc})"), exc
        if isinstance(error, Unauthorized) and error.status == 401 and not retried:
            await self.close()  # the token may have rotated: log in again, once
            return await self._call(what, call, retried=True)
        raise error from cause

    async def create(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object; :class:`Conflict` when it exists."""
        data = dict(body)
        data["metadata"] = {**(data.get("metadata") or {}), "namespace": namespace}
        obj = _generic(resource).from_dict(data)
        created = await self._call(f"create {resource.plural} {namespace}", lambda c: c.create(obj))
        return _to_dict(created)

    async def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any]:
        """The object; :class:`NotFound` when it does not exist."""
        got = await self._call(
            f"get {resource.plural} {namespace}/{name}", lambda c: c.get(_generic(resource), name, namespace=namespace)
        )
        return _to_dict(got)

    async def merge_patch(
        self, resource: Resource, namespace: str, name: str, patch: Mapping[str, Any], *, status: bool = False
    ) -> dict[str, Any]:
        """A JSON merge patch of the object (``status``: through the status subresource)."""
        res = _generic(resource).Status if status else _generic(resource)
        what = f"patch {resource.plural}{'/status' if status else ''} {namespace}/{name}"
        patched = await self._call(
            what, lambda c: c.patch(res, name, dict(patch), namespace=namespace, patch_type=PatchType.MERGE)
        )
        return _to_dict(patched)

    async def delete(self, resource: Resource, namespace: str, name: str) -> None:
        """Delete an object; :class:`NotFound` when it was already gone."""
        await self._call(
            f"delete {resource.plural} {namespace}/{name}",
            lambda c: c.delete(_generic(resource), name, namespace=namespace),
        )

    async def list(
        self, resource: Resource, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Objects in one namespace (None: all of them) matching ``labels``."""

        async def collect(c: AsyncClient) -> list[dict[str, Any]]:
            found = c.list(_generic(resource), namespace=namespace or "*", labels=dict(labels or {}))
            return [_to_dict(obj) async for obj in found]

        return await self._call(f"list {resource.plural} {namespace or '*'}", collect)

    async def list_pages(
        self, resource: Resource, namespace: str | None = None, *, labels: Mapping[str, str] | None = None, limit: int
    ) -> AsyncIterator[Page]:
        """Objects as :meth:`list`, in pages of at most ``limit`` (LIST with ``limit``/``continue``).

        Only one page is held at a time: the caller deals with it before the next is asked for.
        """
        client = await self._connect()
        found = client.list(_generic(resource), namespace=namespace or "*", labels=dict(labels or {}), chunk_size=limit)
        objects = found.__aiter__()
        while True:
            page = await self._call(f"list {resource.plural} {namespace or '*'}", lambda _: _next_page(objects, limit))
            if not page:
                return
            yield page
