"""A kubeconfig exec credential plugin, run as kubectl runs it, for the operator started outside a cluster.

kopf takes its credentials from a login function, not from a client library that runs plugins, so
the operator runs the plugin itself and hands kopf (and its own reports client) the token or client
certificate it prints, with the expiry the plugin states. Both log in again when the API server
answers 401, which runs the plugin again. The plugin is the user's own command from their kubeconfig
(``aws eks get-token``, ``gke-gcloud-auth-plugin``, ``kubelogin``): in a cluster the service account
is used and no plugin is ever run.

The ExecCredential format is Kubernetes' client-go credential plugin API
(``client.authentication.k8s.io``): ``status.token``, or ``status.clientCertificateData`` with
``status.clientKeyData``, and an optional ``status.expirationTimestamp`` in RFC 3339.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bottleneck_operator.contract.times import parse_rfc3339
from bottleneck_operator.kube.credentials import Credentials
from bottleneck_operator.kube.errors import CredentialsError

# kubectl gives a plugin no fixed time; a cloud CLI fetching a token answers in seconds, and a
# plugin that hangs must not hold the operator's start for ever.
EXEC_TIMEOUT = 60.0


@dataclass(frozen=True)
class ExecCredential:
    """What an exec plugin printed: a bearer token or a client certificate, and until when it holds."""

    token: str | None = None
    certificate_data: str | None = None
    key_data: str | None = None
    expiration: datetime | None = None


def run_exec_plugin(config: Mapping[str, Any], *, timeout: float = EXEC_TIMEOUT) -> ExecCredential:
    """Run the plugin (``command``, ``args``, ``env`` as the kubeconfig gives them) and read its answer.

    Raises:
        CredentialsError: the plugin failed, timed out, or printed no usable ExecCredential; the
            message carries its own error output, which is where cloud CLIs say what to do.
    """
    command = [str(config["command"]), *(str(a) for a in config.get("args") or ())]
    env = {**os.environ, **{str(e["name"]): str(e["value"]) for e in config.get("env") or ()}}
    try:
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CredentialsError(f"exec plugin {command[0]}: {exc}") from exc
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[-2000:]
        raise CredentialsError(f"exec plugin {command[0]} exited {done.returncode}: {said or '(no output)'}")
    return parse_exec_credential(done.stdout, command[0])


def parse_exec_credential(output: bytes, program: str) -> ExecCredential:
    """The credential in a plugin's standard output (an ExecCredential object)."""
    try:
        doc = json.loads(output)
        status = doc.get("status") or {}
    except (ValueError, AttributeError) as exc:
        raise CredentialsError(f"exec plugin {program} printed no ExecCredential JSON") from exc
    if not isinstance(status, Mapping):
        raise CredentialsError(f"exec plugin {program}: the ExecCredential's status is not an object")
    token, cert, key = status.get("token"), status.get("clientCertificateData"), status.get("clientKeyData")
    if not token and not (cert and key):
        raise CredentialsError(
            f"exec plugin {program} gave neither a token nor a client certificate and key in its ExecCredential"
        )
    expiry = status.get("expirationTimestamp")
    try:
        expiration = datetime.fromtimestamp(parse_rfc3339(expiry), UTC) if expiry else None
    except ValueError as exc:
        raise CredentialsError(f"exec plugin {program}: expirationTimestamp: {exc}") from exc
    return ExecCredential(
        token=str(token) if token else None,
        certificate_data=str(cert) if cert and not token else None,
        key_data=str(key) if key and not token else None,
        expiration=expiration,
    )


def resolved(creds: Credentials) -> tuple[Credentials, datetime | None]:
    """The credentials with the plugin run (a token or a certificate in its place) and a token file read.

    For a login function that hands plain values on (kopf's): returns them with the expiry the
    plugin stated, None when nothing expires.
    """
    expiration = None
    if creds.exec_config:
        got = run_exec_plugin(creds.exec_config)
        creds = replace(
            creds,
            exec_config=None,
            token=got.token,
            certificate_path=None if got.certificate_data else creds.certificate_path,
            certificate_data=got.certificate_data or creds.certificate_data,
            private_key_path=None if got.key_data else creds.private_key_path,
            private_key_data=got.key_data or creds.private_key_data,
        )
        expiration = got.expiration
    if creds.token_file and not creds.token:
        try:
            token = Path(creds.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CredentialsError(f"cannot read the token file {creds.token_file}: {exc}") from exc
        creds = replace(creds, token=token, token_file=None)
    return creds, expiration
