"""The admission endpoint served by kopf's own HTTPS server, and AdmissionReview helpers."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from _webhook_support import Endpoint

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.server import serve_admission
from bottleneck_operator_dev.demo import cluster as cluster_mod


@pytest.fixture(scope="session")
def tls_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made with the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "tls.crt", d / "tls.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def cert_dir(tls_pair: tuple[Path, Path], tmp_path: Path) -> Path:
    """A directory holding ``tls.crt`` and ``tls.key``, as the chart mounts the webhook's Secret."""
    cert, key = tls_pair
    d = tmp_path / "certs"
    d.mkdir()
    shutil.copy(cert, d / "tls.crt")
    shutil.copy(key, d / "tls.key")
    return d


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The emulated API server, with ``KUBECONFIG`` pointing at it (kopf logs in through it)."""
    with cluster_mod.LocalCluster() as c:
        monkeypatch.setenv("KUBECONFIG", str(c.write_kubeconfig(tmp_path / "kubeconfig")))
        yield c


@pytest.fixture
async def endpoint(tls_pair: tuple[Path, Path]) -> AsyncIterator[Endpoint]:
    cert, key = tls_pair
    # "ml" enforces Pod Security "privileged": everything is admitted.
    async with serve_admission(Settings().injection, certfile=cert, keyfile=key, levels={"ml": "privileged"}) as url:
        ctx = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            yield Endpoint(url=url, ssl=ctx, session=session)


@pytest.fixture(autouse=True)
def _fresh_notes() -> None:
    """Each test starts with no Pod Security note already posted (the webhook says each once)."""
    from bottleneck_operator.webhook import handlers

    handlers._noted.clear()
