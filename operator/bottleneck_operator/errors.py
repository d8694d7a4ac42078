"""The project's own error tree, by what the caller should do, and the CLI's documented exit codes.

Every boundary (Prometheus, Kubernetes, model files, user input) raises a subclass of one of the
three branches below, with the library's exception chained as ``__cause__`` (no library type
leaks). The branch says what to do; the boundary's subclass says where it happened:

- :class:`Unavailable` — the service is unreachable, too slow or failing (5xx, 429): retry later;
- :class:`Rejected` — the service answered and refused this request (4xx, malformed answer):
  repeating the same request will not help, other requests may still work;
- :class:`UsageError` — the caller's mistake (a bad name, time, flag or setting): fix the input.

``status`` carries the HTTP status when there was one, as a field: never parsed back from a message.
The CLI turns these into one line on stderr and the exit code below: never a traceback for a user
error.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_NO_DATA = 3
EXIT_PROMETHEUS_UNREACHABLE = 4


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

    exit_code = EXIT_PROMETHEUS_UNREACHABLE


class Rejected(BottleneckError):
    """A service answered but refused this request, or answered with something unusable."""

    exit_code = EXIT_PROMETHEUS_UNREACHABLE


class UsageError(BottleneckError):
    """The caller asked for something invalid (bad flag value, name, time or setting)."""

    exit_code = EXIT_USAGE


class NoData(BottleneckError):
    """The service holds no data for what was asked (e.g. a Job Prometheus never saw)."""

    exit_code = EXIT_NO_DATA


class ModelError(UsageError):
    """The model file is missing, untrusted, malformed or does not match the code's feature schema.

    A usage error (exit 2): the model file is a setting (``model_path``), and the fix is another file.
    """
