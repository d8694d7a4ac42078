"""RFC 3339 times, the way Kubernetes writes them: the one parser and the one formatter.

Every time the project reads (a report's window, a Job's ``startTime``, a condition's
``lastTransitionTime``, ``analyze --start``) goes through :func:`parse_rfc3339`, so they all accept
the same forms and refuse the same ones: a time without a zone is refused rather than read in this
machine's local zone, which would shift it by hours without a word.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_rfc3339(text: str) -> float:
    """An RFC 3339 time (``2026-01-01T10:00:00Z``, ``...T10:00:00.123456+02:00``) as unix seconds.

    Args:
        text: the time; ``t`` and ``z`` may be lower case, as RFC 3339 allows.

    Returns:
        Unix seconds.

    Raises:
        ValueError: not an RFC 3339 time, no time zone, or a time this machine cannot represent.
    """
    try:
        parsed = datetime.fromisoformat(text.strip().upper())
    except ValueError as exc:
        raise ValueError(f"not an RFC 3339 time: {text!r}") from exc
    if parsed.tzinfo is None:
        raise ValueError(f"an RFC 3339 time needs a time zone (Z or +HH:MM): {text!r}")
    try:
        return parsed.timestamp()
    except (OverflowError, OSError) as exc:
        raise ValueError(f"not a time this machine can represent: {text!r}") from exc


def parse_rfc3339_or_none(value: object) -> float | None:
    """:func:`parse_rfc3339` for values read from an API object: None when absent, not a string or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None


def rfc3339(ts: float) -> str:
    """Unix seconds as RFC 3339 UTC with a 'Z', as Kubernetes writes times."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clock(ts: float) -> str:
    """Unix seconds as the UTC time of day (``10:00:00``)."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%H:%M:%S")
