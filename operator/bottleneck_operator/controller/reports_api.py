"""A thin async client for BottleneckReports, with its own error tree.

kopf talks to the API server for what it watches; the operator's own writes (create a report,
patch its status, list and delete old ones) go through this module: aiohttp with the same
credentials kopf uses (``kopf.login_via_client`` -> in-cluster service account or kubeconfig).
No aiohttp type leaves this module: every failure is a :class:`ReportsApiError` subclass with the
library's exception chained as ``__cause__``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from bottleneck_operator.contract import names
from bottleneck_operator.contract.names import (
    API_GROUP,
    GROUP_VERSION,
    JOB_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    REPORT_KIND,
    REPORT_PLURAL,
)
from bottleneck_operator.errors import BottleneckError

GROUP, VERSION, PLURAL, KIND, API_VERSION = API_GROUP, names.API_VERSION, REPORT_PLURAL, REPORT_KIND, GROUP_VERSION


class ReportsApiError(BottleneckError):
    """The Kubernetes API refused or failed a request about a report."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ReportNotFound(ReportsApiError):
    """The report (or its resource type: is the CRD installed?) does not exist."""


class ReportConflict(ReportsApiError):
    """409: the report already exists, or a stale resourceVersion was sent."""


class ApiUnavailable(ReportsApiError):
    """The API server could not be reached (connection refused, timeout, 5xx)."""


class ApiUnauthorized(ReportsApiError):
    """401/403: the credentials are missing, expired, or lack the RBAC permission."""


Credentials = Any  # kopf.ConnectionInfo: kept loose so this module does not depend on kopf's types
LoginFn = Callable[[], Credentials]


def _ssl_context(info: Credentials, tmpdir: Path) -> ssl.SSLContext | bool:
    if info.insecure:
        return False
    ctx = ssl.create_default_context(cafile=str(info.ca_path) if info.ca_path else None)
    if info.ca_data:
        data = info.ca_data.decode() if isinstance(info.ca_data, bytes) else info.ca_data
        # kubeconfig carries base64 PEM; kopf has already decoded it when it is raw PEM
        ctx.load_verify_locations(cadata=_pem(data))
    cert, key = info.certificate_path, info.private_key_path
    if info.certificate_data:
        cert = tmpdir / "client.crt"
        cert.write_text(_pem(_text(info.certificate_data)))
    if info.private_key_data:
        key = tmpdir / "client.key"
        key.write_text(_pem(_text(info.private_key_data)))
        key.chmod(0o600)
    if cert:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _pem(data: str) -> str:
    if "-----BEGIN" in data:
        return data
    import base64

    return base64.b64decode(data).decode()


class ReportsApi:
    """Create, read, patch, list and delete BottleneckReports.

    Args:
        login: returns fresh credentials (a ``kopf.ConnectionInfo``); called lazily, and again
            once after a 401 so rotated tokens keep working.
        concurrency: at most this many requests in flight (1,000 reports per pass stay polite).
        timeout: seconds per request.
    """

    def __init__(self, login: LoginFn, *, concurrency: int = 32, timeout: float = 30.0) -> None:
        self._login = login
        self._session: aiohttp.ClientSession | None = None
        self._server = ""
        self._sem = asyncio.Semaphore(concurrency)
        self._connecting = asyncio.Lock()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.requests = 0

    async def _connect(self) -> aiohttp.ClientSession:
        if self._session is not None:
            return self._session
        async with self._connecting:  # many first requests at once: one login, one session
            if self._session is not None:
                return self._session
            return await self._open()

    async def _open(self) -> aiohttp.ClientSession:
        try:
            info = await asyncio.to_thread(self._login)
        except Exception as exc:  # a login library's own errors: wrap them
            raise ApiUnauthorized(f"cannot log in to the Kubernetes API: {exc}") from exc
        if info is None:
            raise ApiUnauthorized("no Kubernetes credentials found (neither in-cluster nor a kubeconfig)")
        self._tmp = tempfile.TemporaryDirectory(prefix="bottleneck-api-")
        headers = {"Accept": "application/json"}
        auth = None
        if info.token:
            headers["Authorization"] = f"{info.scheme or 'Bearer'} {info.token}"
        elif info.username and info.password:
            auth = aiohttp.BasicAuth(info.username, info.password)
        try:
            ssl_ctx = _ssl_context(info, Path(self._tmp.name))
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ApiUnauthorized(f"bad TLS material in the Kubernetes credentials: {exc}") from exc
        self._server = str(info.server).rstrip("/")
        self._session = aiohttp.ClientSession(
            headers=headers,
            auth=auth,
            timeout=self._timeout,
            connector=aiohttp.TCPConnector(ssl=ssl_ctx, limit=64),
        )
        return self._session

    async def close(self) -> None:
        """Close the HTTP session (idempotent)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    @staticmethod
    def _path(namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
        path = f"/apis/{GROUP}/{VERSION}"
        if namespace:
            path += f"/namespaces/{quote(namespace, safe='')}"
        path += f"/{PLURAL}"
        if name:
            path += f"/{quote(name, safe='')}"
        if subresource:
            path += f"/{subresource}"
        return path

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        _retried: bool = False,
    ) -> Any:
        session = await self._connect()
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if body is not None else {}
        async with self._sem:
            self.requests += 1
            try:
                async with session.request(
                    method, self._server + path, data=data, params=params, headers=headers
                ) as resp:
                    text = await resp.text()
                    status = resp.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise ApiUnavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if status == 401 and not _retried:
            await self.close()  # the token may have rotated: log in again, once
            return await self._request(method, path, body=body, params=params, content_type=content_type, _retried=True)
        if status >= 400:
            raise _error_for(status, f"{method} {path}", text)
        try:
            return json.loads(text) if text else {}
        except ValueError as exc:
            raise ReportsApiError(f"{method} {path}: the API answered with invalid JSON", status=status) from exc

    async def create(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create a report; raises :class:`ReportConflict` when it already exists."""
        result: dict[str, Any] = await self._request("POST", self._path(namespace), body=dict(body))
        return result

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The report, or None when it does not exist."""
        try:
            result: dict[str, Any] = await self._request("GET", self._path(namespace, name))
        except ReportNotFound:
            return None
        return result

    async def patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """JSON merge patch of the main resource (metadata, spec)."""
        result: dict[str, Any] = await self._request(
            "PATCH", self._path(namespace, name), body=dict(patch), content_type="application/merge-patch+json"
        )
        return result

    async def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
        """JSON merge patch of ``.status`` through the status subresource.

        A merge patch carries no resourceVersion, so it never conflicts with a concurrent writer:
        the operator is the only writer of a report's status and always sends whole fields.
        """
        result: dict[str, Any] = await self._request(
            "PATCH",
            self._path(namespace, name, "status"),
            body={"status": dict(status)},
            content_type="application/merge-patch+json",
        )
        return result

    async def delete(self, namespace: str, name: str) -> bool:
        """Delete a report; False when it was already gone."""
        try:
            await self._request("DELETE", self._path(namespace, name))
        except ReportNotFound:
            return False
        return True

    async def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """Reports managed by this operator, in one namespace or all of them."""
        result = await self._request(
            "GET", self._path(namespace), params={"labelSelector": f"{MANAGED_BY_LABEL}={MANAGED_BY}"}
        )
        items: list[dict[str, Any]] = list(result.get("items") or [])
        # Some servers (and emulators) ignore the selector: filter again here.
        return [i for i in items if ((i.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY]


def _error_for(status: int, what: str, text: str) -> ReportsApiError:
    message = text[:300]
    try:
        payload = json.loads(text)
        if isinstance(payload, dict) and payload.get("message"):
            message = str(payload["message"])[:300]
    except ValueError:
        pass
    full = f"{what}: HTTP {status}: {message}"
    if status == 404:
        return ReportNotFound(full, status=status)
    if status == 409:
        return ReportConflict(full, status=status)
    if status in (401, 403):
        return ApiUnauthorized(full, status=status)
    if status >= 500 or status == 429:
        return ApiUnavailable(full, status=status)
    return ReportsApiError(full, status=status)


def report_body(namespace: str, job: str, uid: str | None) -> dict[str, Any]:
    """A new report for a Job: labels per the chart's conventions, no ownerReference.

    Reports must outlive their Job (Jobs with ``ttlSecondsAfterFinished`` vanish), so the Job is
    referenced by name and uid in the spec, never as an owner. The status is written afterwards
    through the status subresource (an API server drops ``.status`` sent with a create).
    """
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": job,
            "namespace": namespace,
            "labels": {JOB_LABEL: job[:63], MANAGED_BY_LABEL: MANAGED_BY},
        },
        "spec": {"jobRef": {"name": job, **({"uid": uid} if uid else {})}},
    }
