"""The Kubernetes client's error tree: what callers branch on, whatever the HTTP library says."""

from __future__ import annotations

from bottleneck_operator.errors import BottleneckError


class KubeError(BottleneckError):
    """The Kubernetes API refused or failed a request."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiUnavailable(KubeError):
    """The API server could not be reached or is overloaded (connection, timeout, 5xx, 429): retry later."""


class NotFound(KubeError):
    """404: the object (or its resource type: is the CRD installed?) does not exist."""


class Conflict(KubeError):
    """409: the object already exists, or a stale resourceVersion was sent."""


class Unauthorized(KubeError):
    """401/403: the credentials are missing, expired, or lack the RBAC permission."""


class ApiRejected(KubeError):
    """Another 4xx: the request itself is wrong (invalid object, bad patch)."""


class CredentialsError(KubeError):
    """No usable credentials: none found, unreadable TLS material, or an unsupported kubeconfig."""


def for_status(status: int, message: str) -> KubeError:
    """The error class for an HTTP status."""
    if status == 404:
        return NotFound(message, status=status)
    if status == 409:
        return Conflict(message, status=status)
    if status in (401, 403):
        return Unauthorized(message, status=status)
    if status >= 500 or status == 429:
        return ApiUnavailable(message, status=status)
    return ApiRejected(message, status=status)
