"""The user's kubeconfig, read as kubectl reads it: ``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``.

Several files in ``$KUBECONFIG`` merge the way kubectl merges them: the first file that names a
cluster, user or context wins, and the first ``current-context`` wins. Paths inside a file are
relative to that file. Exec and auth-provider plugins are refused with a clear message: they run
other programs to fetch tokens, which this plugin does not do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bottleneck_operator.kube import Credentials, CredentialsError


@dataclass(frozen=True)
class Target:
    """Where to send requests, and the namespace the context defaults to."""

    credentials: Credentials
    namespace: str
    context: str


def _files(explicit: str | None) -> list[Path]:
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise CredentialsError(f"stat {explicit}: no such file or directory (the --kubeconfig flag)")
        return [path]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p and Path(p).expanduser().is_file()]
    default = Path("~/.kube/config").expanduser()
    return [default] if default.is_file() else []


def _merge(paths: list[Path]) -> tuple[dict[str, tuple[dict[str, Any], Path]], str | None]:
    """Named entries ("cluster/NAME", "user/NAME", "context/NAME") with their file, and the current context."""
    named: dict[str, tuple[dict[str, Any], Path]] = {}
    current: str | None = None
    for path in paths:
        try:
            config = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CredentialsError(f"cannot read the kubeconfig {path}: {exc}") from exc
        if not isinstance(config, dict):
            raise CredentialsError(f"the kubeconfig {path} is not a kubeconfig (a YAML mapping)")
        current = current or config.get("current-context") or None
        for kind in ("cluster", "user", "context"):
            for entry in config.get(f"{kind}s") or []:
                key = f"{kind}/{entry.get('name')}"
                if key not in named:
                    named[key] = (entry.get(kind) or {}, path)
    return named, current


def load(kubeconfig: str | None = None, context: str | None = None) -> Target:
    """The credentials and default namespace of a kubeconfig context.

    Args:
        kubeconfig: an explicit file (kubectl's ``--kubeconfig``).
        context: the context to use (kubectl's ``--context``); default the current context.

    Returns:
        The target.

    Raises:
        CredentialsError: no kubeconfig, no such context, or a user this plugin cannot log in as.
    """
    paths = _files(kubeconfig)
    if not paths:
        raise CredentialsError("no kubeconfig found: set KUBECONFIG, pass --kubeconfig, or write ~/.kube/config")
    named, current = _merge(paths)
    name = context or current
    if not name:
        raise CredentialsError("the kubeconfig has no current context: pass --context")
    if f"context/{name}" not in named:
        raise CredentialsError(f'context "{name}" does not exist in the kubeconfig')
    ctx, _ = named[f"context/{name}"]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if f"cluster/{cluster_name}" not in named:
        raise CredentialsError(f'context "{name}": cluster "{cluster_name}" does not exist in the kubeconfig')
    cluster, cluster_file = named[f"cluster/{cluster_name}"]
    user, user_file = named.get(f"user/{user_name}", ({}, cluster_file))
    if not cluster.get("server"):
        raise CredentialsError(f'cluster "{cluster_name}" has no server in the kubeconfig')
    return Target(
        _credentials(cluster, cluster_file, user, user_file, str(user_name)), ctx.get("namespace") or "default", name
    )


def _credentials(
    cluster: dict[str, Any], cluster_file: Path, user: dict[str, Any], user_file: Path, user_name: str
) -> Credentials:
    if user.get("exec") or user.get("auth-provider"):
        raise CredentialsError(
            f'user "{user_name}" logs in through an exec or auth-provider plugin, which kubectl-bottleneck does not '
            "run; use a context whose user has a token or a client certificate"
        )
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = _read(user_file, user["tokenFile"]).strip()
    return Credentials(
        server=str(cluster["server"]).rstrip("/"),
        token=token or None,
        username=user.get("username"),
        password=user.get("password"),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        ca_path=_path(cluster_file, cluster.get("certificate-authority")),
        ca_data=cluster.get("certificate-authority-data"),
        certificate_path=_path(user_file, user.get("client-certificate")),
        certificate_data=user.get("client-certificate-data"),
        private_key_path=_path(user_file, user.get("client-key")),
        private_key_data=user.get("client-key-data"),
    )


def _path(base: Path, value: str | None) -> str | None:
    # kubectl resolves relative paths against the file that names them, not the working directory.
    if not value:
        return None
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base.parent / path)


def _read(base: Path, value: str) -> str:
    path = _path(base, value)
    try:
        return Path(str(path)).read_text()
    except OSError as exc:
        raise CredentialsError(f"cannot read the token file {path}: {exc}") from exc
