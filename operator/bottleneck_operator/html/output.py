"""Writing a page to the file the user named (``--html FILE``): the one writer and its one error.

``analyze``, ``demo``, ``kubectl bottleneck show`` and ``summary`` all write through
:func:`write_page`, so a path that cannot be written reads the same from each: one line naming the
file and the system's reason, a usage error (exit code 2; the plugin's 1, as all its errors).
"""

from __future__ import annotations

from pathlib import Path

from bottleneck_operator.errors import UsageError


class PageNotWritten(UsageError):
    """The HTML page could not be written (no such directory, no permission, disk full): fix the path."""


def write_page(text: str, path: Path) -> Path:
    """Write ``text`` to ``path`` (UTF-8) and return the path.

    Raises:
        PageNotWritten: the file could not be written; the system's reason is in the message and
            the ``OSError`` chained as its cause.
    """
    path = Path(path)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PageNotWritten(f"--html: cannot write {path}: {exc.strerror or exc}") from exc
    return path
