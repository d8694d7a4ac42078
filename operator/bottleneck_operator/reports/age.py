"""How kubectl shows a resource's age (the AGE column), shared by every table of reports."""

from __future__ import annotations


def kubectl_age(created: float | None, now: float) -> str:
    """kubectl's short age (45s, 3m12s, 2h5m, 4d) of a resource created at ``created`` (unix seconds)."""
    if created is None:
        return "<unknown>"
    seconds = max(0, int(now - created))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 600:
        return f"{seconds // 60}m{seconds % 60}s"
    if seconds < 3 * 3600:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60}m"
    return f"{seconds // 86400}d"
