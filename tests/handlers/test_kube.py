"""The Kubernetes client package: no library type leaks out, credentials are read safely."""

from __future__ import annotations

import asyncio
import base64
import inspect
import ssl
import subprocess
import typing
from pathlib import Path
from typing import Any

import pytest

import bottleneck_operator.kube as kube
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.kube import Credentials, CredentialsError, KubeClient, NotFound, Resource
from bottleneck_operator.kube.errors import ApiRejected, ApiUnavailable, Conflict, KubeError, Unauthorized, for_status
from bottleneck_operator_dev.demo.cluster import LocalCluster

FOREIGN = ("lightkube", "httpx")
REPORTS = Resource("bottleneck.dev", "v1alpha1", "BottleneckReport", "bottleneckreports")


def _annotations(obj: Any) -> list[str]:
    out: list[str] = []
    members = (
        [obj]
        if not inspect.isclass(obj)
        else [m for n, m in inspect.getmembers(obj) if callable(m) and not n.startswith("_")]
    )
    for member in members:
        try:
            hints = typing.get_type_hints(member)
        except (TypeError, NameError):
            hints = getattr(member, "__annotations__", {}) or {}
        out += [repr(h) for h in hints.values()]
    return out


def test_no_library_type_in_the_public_surface() -> None:
    for name in kube.__all__:
        obj = getattr(kube, name)
        assert not obj.__module__.startswith(FOREIGN), name
        for hint in _annotations(obj):
            assert not any(f in hint for f in FOREIGN), f"{name}: {hint}"
        if inspect.isclass(obj):
            assert not any(b.__module__.startswith(FOREIGN) for b in obj.__mro__), name


def test_error_tree_by_status() -> None:
    assert type(for_status(404, "x")) is NotFound
    assert type(for_status(409, "x")) is Conflict
    assert type(for_status(401, "x")) is Unauthorized and type(for_status(403, "x")) is Unauthorized
    assert type(for_status(503, "x")) is ApiUnavailable and type(for_status(429, "x")) is ApiUnavailable
    assert type(for_status(422, "x")) is ApiRejected
    assert all(issubclass(c, KubeError) and issubclass(c, BottleneckError) for c in (NotFound, CredentialsError))


def test_objects_round_trip_and_errors_are_ours(cluster: LocalCluster) -> None:
    body = {
        "apiVersion": "bottleneck.dev/v1alpha1",
        "kind": "BottleneckReport",
        "metadata": {"name": "r", "labels": {"team": "a"}},
        "spec": {"jobRef": {"name": "r"}},
    }

    async def scenario() -> None:
        client = KubeClient(lambda: Credentials(server=cluster.url, token="t"))
        try:
            created = await client.create(REPORTS, "ml", body)
            assert created["metadata"]["namespace"] == "ml"
            with pytest.raises(Conflict) as err:
                await client.create(REPORTS, "ml", body)
            assert err.value.status == 409 and err.value.__cause__ is not None
            await client.merge_patch(REPORTS, "ml", "r", {"status": {"phase": "Running"}}, status=True)
            assert (await client.get(REPORTS, "ml", "r"))["status"] == {"phase": "Running"}
            assert [o["metadata"]["name"] for o in await client.list(REPORTS, labels={"team": "a"})] == ["r"]
            await client.delete(REPORTS, "ml", "r")
            with pytest.raises(NotFound):
                await client.get(REPORTS, "ml", "r")
        finally:
            await client.close()

    asyncio.run(scenario())


def test_no_credentials_is_a_clear_error() -> None:
    with pytest.raises(CredentialsError, match="no Kubernetes credentials"):
        Credentials.from_login(None)


def _self_signed(tmp_path: Path) -> tuple[str, str]:
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
         "-days", "1", "-subj", "/CN=bottleneck-test"],
        check=True, capture_output=True,
    )  # fmt: skip
    return crt.read_text(), key.read_text()


def test_inline_client_certificate_is_loaded_from_memory(tmp_path: Path) -> None:
    crt, key = _self_signed(tmp_path)
    creds = Credentials(
        server="https://example.invalid",
        ca_data=base64.b64encode(crt.encode()).decode(),
        certificate_data=base64.b64encode(crt.encode()).decode(),
        private_key_data=key,
    )
    ctx = creds.ssl_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert any(c.get("subject") for c in ctx.get_ca_certs())
    broken = Credentials(server="https://example.invalid", certificate_data=crt, private_key_data="not a key")
    with pytest.raises(CredentialsError, match="bad TLS material"):
        broken.ssl_context()
