"""A user's kubeconfig, read as kubectl reads it, for the tools people run (the kubectl plugin, ``analyze``).

Which files: ``--kubeconfig``, else every file of ``$KUBECONFIG`` (a path list), else
``~/.kube/config``. Several files merge as kubectl merges them: the first file that names a
cluster, user or context wins, and the first ``current-context`` wins. Paths inside a file
(certificates, token files, an exec command given as a path) are relative to that file, so they are
made absolute while merging; the merged config is then handed to lightkube's loader
(``KubeConfig.from_dict``), which selects the context and parses the cluster and user.

How the user logs in is lightkube's: a token, a token file (re-read when the server answers 401, as
client-go does), basic auth, a client certificate, or an exec credential plugin (``aws eks
get-token``, ``gke-gcloud-auth-plugin``, ``kubelogin``...) run when the first request is made and
again when its token is refused. kubectl's legacy ``auth-provider`` entries are not run by
lightkube: an ``oidc`` provider's current ``id-token`` is sent as the bearer token (what kubectl
sends while it is valid); any other provider gets a message that says how to move to its exec plugin.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml
from lightkube import ConfigError
from lightkube.config.kubeconfig import KubeConfig

from bottleneck_operator.kube.credentials import Credentials
from bottleneck_operator.kube.errors import CredentialsError

# kubectl accepts these ExecCredential versions; lightkube's own check knows the two beta ones.
EXEC_VERSIONS = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
    "client.authentication.k8s.io/v1alpha1",
)
_PATH_KEYS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}


@dataclass(frozen=True)
class Target:
    """Where to send requests, and the namespace the context defaults to."""

    credentials: Credentials
    namespace: str
    context: str


def kubeconfig_files(explicit: str | None) -> list[Path]:
    """The files kubectl would read: ``--kubeconfig``, else ``$KUBECONFIG``'s existing files, else the default."""
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


def _absolute(base: Path, value: Any) -> Any:
    # kubectl resolves relative paths against the file that names them, not the working directory.
    if not isinstance(value, str) or not value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base.parent / path)


def _resolved(kind: str, entry: Mapping[str, Any], base: Path) -> dict[str, Any]:
    out = dict(entry)
    for key in _PATH_KEYS.get(kind, ()):
        if key in out:
            out[key] = _absolute(base, out[key])
    exec_ = out.get("exec")
    if kind == "user" and isinstance(exec_, Mapping):
        command = str(exec_.get("command") or "")
        # A bare name is looked up on PATH; a command with a slash is a path, relative to the file.
        out["exec"] = {**exec_, "command": _absolute(base, command) if os.sep in command else command}
    return out


def merge(paths: list[Path]) -> dict[str, Any]:
    """One kubeconfig dict from several files, merged as kubectl merges them (the first name wins)."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": None}
    seen: set[str] = set()
    for path in paths:
        try:
            config = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CredentialsError(f"cannot read the kubeconfig {path}: {exc}") from exc
        if not isinstance(config, dict):
            raise CredentialsError(f"the kubeconfig {path} is not a kubeconfig (a YAML mapping)")
        merged["current-context"] = merged["current-context"] or config.get("current-context") or None
        for kind in ("cluster", "user", "context"):
            for entry in config.get(f"{kind}s") or []:
                if not isinstance(entry, Mapping) or f"{kind}/{entry.get('name')}" in seen:
                    continue
                seen.add(f"{kind}/{entry.get('name')}")
                body = entry.get(kind)
                body = body if isinstance(body, Mapping) else {}
                merged[f"{kind}s"].append({"name": entry.get("name"), kind: _resolved(kind, body, path)})
    return merged


def load(kubeconfig: str | None = None, context: str | None = None) -> Target:
    """The credentials and default namespace of a kubeconfig context.

    Args:
        kubeconfig: an explicit file (kubectl's ``--kubeconfig``).
        context: the context to use (kubectl's ``--context``); default the current context.

    Returns:
        The target.

    Raises:
        CredentialsError: no kubeconfig, no such context, or a user this tool cannot log in as.
    """
    paths = kubeconfig_files(kubeconfig)
    if not paths:
        raise CredentialsError("no kubeconfig found: set KUBECONFIG, pass --kubeconfig, or write ~/.kube/config")
    merged = merge(paths)
    name = context or merged["current-context"]
    if not name:
        raise CredentialsError("the kubeconfig has no current context: pass --context")
    contexts = {e["name"]: e["context"] for e in merged["contexts"]}
    if name not in contexts:
        raise CredentialsError(f'context "{name}" does not exist in the kubeconfig')
    cluster_name = contexts[name].get("cluster")
    cluster = next((e["cluster"] for e in merged["clusters"] if e["name"] == cluster_name), None)
    if cluster is None:
        raise CredentialsError(f'context "{name}": cluster "{cluster_name}" does not exist in the kubeconfig')
    if not cluster.get("server"):
        raise CredentialsError(f'cluster "{cluster_name}" has no server in the kubeconfig')
    user_name = contexts[name].get("user")
    if user_name and not any(e["name"] == user_name for e in merged["users"]):
        merged["users"].append({"name": user_name, "user": {}})  # kubectl: an unknown user is no auth at all
    try:
        single = KubeConfig.from_dict(merged).get(name)
    except (ConfigError, msgspec.ValidationError, KeyError, TypeError) as exc:
        raise CredentialsError(f'context "{name}": the kubeconfig is not valid: {exc}') from exc
    if single is None:  # only when no context is named, which was ruled out above
        raise CredentialsError("the kubeconfig has no current context: pass --context")
    user: Mapping[str, Any] = next((e["user"] for e in merged["users"] if e["name"] == user_name), {})
    return Target(_credentials(cluster, user, str(user_name)), single.namespace, name)


def _credentials(cluster: Mapping[str, Any], user: Mapping[str, Any], user_name: str) -> Credentials:
    token = user.get("token") or _provider_token(user.get("auth-provider"), user_name)
    token_file = user.get("tokenFile")
    if token_file and not Path(token_file).is_file():
        raise CredentialsError(f'user "{user_name}": cannot read the token file {token_file}')
    return Credentials(
        server=str(cluster["server"]).rstrip("/"),
        token=token or None,
        token_file=token_file or None,
        exec_config=_exec_config(user.get("exec"), user_name),
        username=user.get("username"),
        password=user.get("password"),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        ca_path=cluster.get("certificate-authority"),
        ca_data=cluster.get("certificate-authority-data"),
        certificate_path=user.get("client-certificate"),
        certificate_data=user.get("client-certificate-data"),
        private_key_path=user.get("client-key"),
        private_key_data=user.get("client-key-data"),
    )


def _exec_config(exec_: Any, user_name: str) -> dict[str, Any] | None:
    """The exec plugin's settings, checked as kubectl checks them before it runs the plugin."""
    if not isinstance(exec_, Mapping):
        return None
    version, command = str(exec_.get("apiVersion") or ""), str(exec_.get("command") or "")
    if version not in EXEC_VERSIONS:
        raise CredentialsError(f'user "{user_name}": exec plugin: invalid apiVersion "{version}"')
    if not command or shutil.which(command) is None:
        hint = exec_.get("installHint")
        raise CredentialsError(
            f'user "{user_name}": exec: executable {command or "(none)"} not found'
            + (f"\n\n{str(hint).strip()}" if hint else "")
        )
    env = [dict(e) for e in exec_.get("env") or () if isinstance(e, Mapping)]
    # kubectl tells the plugin which version to answer in and that nobody can answer a prompt;
    # lightkube's runner passes the environment but not this variable.
    info = {"apiVersion": version, "kind": "ExecCredential", "spec": {"interactive": False}}
    env.append({"name": "KUBERNETES_EXEC_INFO", "value": json.dumps(info)})
    return {
        # lightkube checks for the two beta versions; a v1 plugin answers in the same shape (status.token).
        "apiVersion": version if version != EXEC_VERSIONS[0] else EXEC_VERSIONS[1],
        "command": command,
        "args": [str(a) for a in exec_.get("args") or ()],
        "env": env,
    }


def _provider_token(provider: Any, user_name: str) -> str | None:
    if not isinstance(provider, Mapping):
        return None
    name = str(provider.get("name") or "")
    config = provider.get("config") or {}
    if name == "oidc" and isinstance(config, Mapping) and config.get("id-token"):
        return str(config["id-token"])
    raise CredentialsError(
        f'user "{user_name}" logs in through the "{name}" auth-provider, which kubectl itself no longer runs '
        "(Kubernetes 1.26 removed them): switch the kubeconfig to the provider's exec plugin "
        "(gke-gcloud-auth-plugin, kubelogin), which kubectl-bottleneck runs as kubectl does"
    )
