"""The project's one Kubernetes client: lightkube's AsyncClient behind a small API.

kopf watches; everything the operator writes itself (reports) goes through :class:`KubeClient`, and
so do the tools people run (the kubectl plugin, ``analyze --from-report``), logged in through the
user's kubeconfig as kubectl reads it (:mod:`.kubeconfig`).
No lightkube or httpx type leaves this package: failures are :mod:`.errors` classes with the
library's exception chained as ``__cause__``.
"""

from bottleneck_operator.kube.client import KubeClient, Resource
from bottleneck_operator.kube.credentials import Credentials
from bottleneck_operator.kube.errors import (
    ApiRejected,
    ApiUnavailable,
    Conflict,
    CredentialsError,
    KubeError,
    NotFound,
    Unauthorized,
)

__all__ = [
    "ApiRejected",
    "ApiUnavailable",
    "Conflict",
    "Credentials",
    "CredentialsError",
    "KubeClient",
    "KubeError",
    "NotFound",
    "Resource",
    "Unauthorized",
]
