"""Flags shared by the commands that read Prometheus, and their mapping onto Settings."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from bottleneck_operator.errors import UsageError

if TYPE_CHECKING:
    # Imported when used: pydantic is a large import, and the `sidecar` command (which parses the same
    # CLI, so imports this module) must stay small inside every profiled pod.
    from bottleneck_operator.settings import Settings


def add_prometheus_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Prometheus (else BOTTLENECK_PROMETHEUS_* variables)")
    g.add_argument("--prometheus-url", help="PromQL API base URL")
    g.add_argument("--prometheus-timeout", type=float, help="seconds per query")
    g.add_argument("--prometheus-bearer-token-file", help="file with a bearer token")
    g.add_argument("--prometheus-ca-file", help="CA bundle for the Prometheus certificate")
    g.add_argument("--prometheus-insecure-skip-verify", action="store_true", default=None)
    g.add_argument("--prometheus-username", help="basic-auth user")
    g.add_argument(
        "--prometheus-header",
        action="append",
        metavar="NAME=VALUE",
        help="extra header, repeatable (e.g. X-Scope-OrgID=team-a)",
    )


def settings_from_args(args: argparse.Namespace, **extra: Any) -> Settings:
    """Settings from flags that were given, else the environment, else defaults."""
    from bottleneck_operator.settings import Settings

    overrides: dict[str, Any] = {}
    for name in (
        "prometheus_url",
        "prometheus_timeout",
        "prometheus_bearer_token_file",
        "prometheus_ca_file",
        "prometheus_insecure_skip_verify",
        "prometheus_username",
    ):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    headers = getattr(args, "prometheus_header", None)
    if headers:
        parsed: dict[str, str] = {}
        for item in headers:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise UsageError(f"--prometheus-header wants NAME=VALUE, got {item!r}")
            parsed[key.strip()] = value.strip()
        overrides["prometheus_headers"] = parsed
    overrides.update({k: v for k, v in extra.items() if v is not None})
    try:
        return Settings(**overrides)
    except ValueError as exc:
        raise UsageError(_short_validation(exc)) from exc


def _short_validation(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = [_named(e["loc"], e["msg"]) for e in errors()]
        return "invalid settings: " + "; ".join(parts)
    return str(exc)


def _named(loc: tuple[Any, ...], msg: str) -> str:
    # Named as the flag and the environment variable name it, without the group that holds it.
    from bottleneck_operator.settings import GROUP_OF

    path = loc[1:] if loc and loc[0] in GROUP_OF.values() else loc
    return f"{'.'.join(str(x) for x in path)}: {msg}" if path else msg


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False)
