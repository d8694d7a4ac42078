"""The project's own error root and the CLI's documented exit codes.

Every boundary (Prometheus, Kubernetes, model files, user input) raises a subclass of
:class:`BottleneckError`, with the library's exception chained as ``__cause__``. The CLI turns
these into one line on stderr and the exit code below: never a traceback for a user error.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_NO_DATA = 3
EXIT_PROMETHEUS_UNREACHABLE = 4


class BottleneckError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code: int = EXIT_INTERNAL


class UsageError(BottleneckError):
    """The user asked for something invalid (bad flag value, bad name, bad time)."""

    exit_code = EXIT_USAGE


class ModelError(BottleneckError):
    """The model file is missing, untrusted or does not match the code's feature schema."""

    exit_code = EXIT_INTERNAL
