"""How kubectl shows a resource's age (the AGE column), shared by every table of reports."""

from __future__ import annotations

from datetime import datetime


def kubectl_age(created: str | None, now: float) -> str:
    """kubectl's short age: 45s, 3m12s, 2h5m, 4d."""
    if not created:
        return "<unknown>"
    try:
        seconds = max(0, int(now - datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()))
    except ValueError:
        return "<unknown>"
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 600:
        return f"{seconds // 60}m{seconds % 60}s"
    if seconds < 3 * 3600:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60}m"
    return f"{seconds // 86400}d"
