"""Credentials for :class:`~bottleneck_operator.kube.client.KubeClient`, and the TLS context built from them.

The credentials are those kopf found (its ``ConnectionInfo``: in-cluster service account, else the
kubeconfig), read by attribute so this package does not depend on kopf. TLS material given inline
(kubeconfig ``*-data`` fields) is loaded from memory: the CA through ``cadata``, a client
certificate and key through anonymous in-memory files, so no key ever lands on a disk.
"""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bottleneck_operator.kube.errors import CredentialsError


@dataclass(frozen=True)
class Credentials:
    """Where the API server is and how to authenticate to it."""

    server: str
    token: str | None = None
    # A file holding the token, re-read when the server answers 401 (rotated tokens keep working).
    token_file: str | None = None
    # A kubeconfig exec credential plugin (apiVersion, command, args, env), run by the client.
    exec_config: dict[str, Any] | None = field(default=None, compare=False)
    scheme: str | None = None
    username: str | None = None
    password: str | None = None
    insecure: bool = False
    ca_path: str | None = None
    ca_data: str | None = None
    certificate_path: str | None = None
    certificate_data: str | None = None
    private_key_path: str | None = None
    private_key_data: str | None = None

    @classmethod
    def from_login(cls, info: Any) -> Credentials:
        """From a kopf ``ConnectionInfo`` (or anything with the same attributes)."""
        if info is None:
            raise CredentialsError("no Kubernetes credentials found (neither in-cluster nor a kubeconfig)")

        def text(name: str) -> str | None:
            value = getattr(info, name, None)
            if value is None:
                return None
            return value.decode() if isinstance(value, bytes) else str(value)

        return cls(
            server=str(info.server).rstrip("/"),
            token=text("token"),
            scheme=text("scheme"),
            username=text("username"),
            password=text("password"),
            insecure=bool(getattr(info, "insecure", False)),
            ca_path=text("ca_path"),
            ca_data=text("ca_data"),
            certificate_path=text("certificate_path"),
            certificate_data=text("certificate_data"),
            private_key_path=text("private_key_path"),
            private_key_data=text("private_key_data"),
        )

    def headers(self) -> dict[str, str]:
        """The Authorization header for a token (basic auth is the client's own)."""
        return {"Authorization": f"{self.scheme or 'Bearer'} {self.token}"} if self.token else {}

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS context to verify the server and present a client certificate (False: insecure)."""
        if self.insecure:
            return False
        try:
            ctx = ssl.create_default_context(cafile=self.ca_path or None)
            if self.ca_data:
                ctx.load_verify_locations(cadata=_pem(self.ca_data))
            self._load_client_cert(ctx)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise CredentialsError(f"bad TLS material in the Kubernetes credentials: {exc}") from exc
        return ctx

    def _load_client_cert(self, ctx: ssl.SSLContext) -> None:
        if not (self.certificate_data or self.certificate_path):
            return
        with contextlib.ExitStack() as stack:
            cert = self.certificate_path
            key = self.private_key_path
            if self.certificate_data:
                cert = stack.enter_context(_in_memory(_pem(self.certificate_data)))
            if self.private_key_data:
                key = stack.enter_context(_in_memory(_pem(self.private_key_data)))
            ctx.load_cert_chain(str(cert), str(key) if key else None)


def _pem(data: str) -> str:
    # kubeconfigs carry base64 of the PEM; kopf has sometimes decoded it already.
    if "-----BEGIN" in data:
        return data
    return base64.b64decode(data).decode()


@contextlib.contextmanager
def _in_memory(text: str) -> Iterator[str]:
    """A path to ``text`` held in an anonymous memory file (Linux), closed afterwards."""
    if not hasattr(os, "memfd_create"):
        raise CredentialsError(
            "inline client certificates (client-certificate-data) need Linux; point the kubeconfig at files"
        )
    fd = os.memfd_create("bottleneck-tls", os.MFD_CLOEXEC)
    try:
        os.write(fd, text.encode())
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)
