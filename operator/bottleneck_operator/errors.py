"""The project's own error tree, by what the caller should do, and the CLI's documented exit codes.

Every boundary (Prometheus, Kubernetes, model files, user input) raises a subclass of one of the
three branches below, with the library's exception chained as ``__cause__`` (no library type
leaks). The branch says what to do; the boundary's subclass says where it happened:

- :class:`Unavailable` — the service is unreachable, too slow or failing (5xx, 429): retry later
  (a kopf handler raises ``kopf.TemporaryError``; the CLI exits 4);
- :class:`Rejected` — the service answered and refused this request (4xx, malformed answer, no data):
  repeating the same request will not help, other requests may still work (``kopf.PermanentError``;
  exit 4, or 3 for :class:`NoData`);
- :class:`UsageError` — the caller's mistake (a bad name, time, flag, setting or model file): fix the
  input (``kopf.PermanentError``; exit 2).

A :class:`BottleneckError` under none of them is the project's own failure (exit 1). A boundary's
base class (``kube.KubeError``) groups its errors by where they happened and is never raised itself.

``status`` carries the HTTP status when there was one, as a field: never parsed back from a message.
The CLI turns these into one line on stderr and the exit code below: never a traceback for a user
error.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_NO_DATA = 3
EXIT_UNAVAILABLE = 4
# The name of code 4 before the Kubernetes errors joined the tree; kept for callers that use it.
EXIT_PROMETHEUS_UNREACHABLE = EXIT_UNAVAILABLE


class BottleneckError(Exception):
    """Base of every error this project raises on purpose.

    Attributes:
        status: the HTTP status of the answer that caused it, None when there was no answer.
    """

    exit_code: int = EXIT_INTERNAL

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Unavailable(BottleneckError):
    """A service could not be reached or kept failing (refused, DNS, TLS, timeout, 5xx, 429): retry later."""

    exit_code = EXIT_UNAVAILABLE


class Rejected(BottleneckError):
    """A service answered but refused this request, or answered with something unusable."""

    exit_code = EXIT_UNAVAILABLE


class UsageError(BottleneckError):
    """The caller asked for something invalid (bad flag value, name, time or setting)."""

    exit_code = EXIT_USAGE


class NoData(Rejected):
    """The service answered, and holds no data for what was asked (e.g. a Job Prometheus never saw).

    A :class:`Rejected`: asking again now gets the same answer. Its own exit code (3) lets a script
    tell "nothing to analyse" from a failing service.
    """

    exit_code = EXIT_NO_DATA


class ModelError(UsageError):
    """The model file is missing, untrusted, malformed or does not match the code's feature schema.

    A usage error (exit 2): the model file is a setting (``model_path``), and the fix is another file.
    """


BRANCHES: tuple[type[BottleneckError], ...] = (Unavailable, Rejected, UsageError)


def branch(error: BottleneckError | type[BottleneckError]) -> type[BottleneckError] | None:
    """The branch an error (or error class) lies under; None for the project's own failures."""
    cls = error if isinstance(error, type) else type(error)
    found = [b for b in BRANCHES if issubclass(cls, b)]
    return found[0] if len(found) == 1 else None
