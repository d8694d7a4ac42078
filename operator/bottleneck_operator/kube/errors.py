"""The Kubernetes client's errors: the project's tree (:mod:`bottleneck_operator.errors`) at the API server.

Each class is a :class:`KubeError` (where it happened) and lies under one branch of the tree (what
to do): callers branch on the tree's classes (``Unavailable``: retry later), or on these where the
Kubernetes meaning matters (``NotFound``, ``Conflict``).
"""

from __future__ import annotations

from bottleneck_operator.errors import BottleneckError, Rejected, Unavailable, UsageError
from bottleneck_operator.httpclient import retryable


class KubeError(BottleneckError):
    """The Kubernetes API refused or failed a request: the base of this boundary's errors, never raised itself."""


class ApiUnavailable(KubeError, Unavailable):
    """The API server could not be reached or is overloaded (connection, timeout, 5xx, 429): retry later."""


class NotFound(KubeError, Rejected):
    """404: the object (or its resource type: is the CRD installed?) does not exist."""


class Conflict(KubeError, Rejected):
    """409: the object already exists, or a stale resourceVersion was sent."""


class Unauthorized(KubeError, Rejected):
    """401/403: the credentials are missing, expired, or lack the RBAC permission."""


class ApiRejected(KubeError, Rejected):
    """Another 4xx: the request itself is wrong (invalid object, bad patch)."""


class CredentialsError(KubeError, UsageError):
    """No usable credentials: none found, unreadable TLS material, or an unsupported kubeconfig (fix the kubeconfig)."""


def for_status(status: int, message: str) -> KubeError:
    """The error class for an HTTP status."""
    if status == 404:
        return NotFound(message, status=status)
    if status == 409:
        return Conflict(message, status=status)
    if status in (401, 403):
        return Unauthorized(message, status=status)
    if retryable(status):  # the shared policy's: overloaded or failing, worth another attempt later
        return ApiUnavailable(message, status=status)
    return ApiRejected(message, status=status)
