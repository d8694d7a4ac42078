"""Certificate renewal: the webhook serves the renewed certificate without a restart.

The files are swapped the way the kubelet updates a mounted Secret after cert-manager renews it:
both files live in a timestamped directory behind the ``..data`` symlink, which is replaced at once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest
from _webhook_support import admission_review, make_job

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.server import CERT_CHECK_INTERVAL, admission_server, serve_admission


def _pair(directory: Path, cn: str) -> Path:
    directory.mkdir(parents=True)
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={cn}",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(directory / "tls.key"),
            "-out", str(directory / "tls.crt"),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return directory


def _mount(secret_dir: Path, version: Path) -> None:
    """Point ``..data`` at ``version`` atomically, as the kubelet does."""
    link = secret_dir / "..data_tmp"
    link.symlink_to(version.name)
    os.replace(link, secret_dir / "..data")


async def _served_cert(port: int) -> bytes:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    assert isinstance(der, bytes)
    return der


def _der(cert: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.read_text())


async def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    secret = tmp_path / "secret"
    old = _pair(secret / "..2026_11_24_00_00_00.1", "old")
    new = _pair(secret / "..2026_11_24_00_10_00.2", "renewed")
    _mount(secret, old)
    for name in ("tls.crt", "tls.key"):
        (secret / name).symlink_to(f"..data/{name}")
    cert, key = secret / "tls.crt", secret / "tls.key"

    async with serve_admission(
        Settings().injection, certfile=cert, keyfile=key, check_interval=0.2, levels={"ml": ""}
    ) as url:
        port = int(url.split(":")[2].split("/")[0])
        assert await _served_cert(port) == _der(old / "tls.crt")
        _mount(secret, new)
        for _ in range(100):
            try:
                if await _served_cert(port) == _der(new / "tls.crt"):
                    break
            except OSError:
                pass  # the listener restarts with the new context: a moment without one
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the renewed certificate was never served")
        # Clients trusting the new certificate get their answers on the same URL.
        trust = ssl.create_default_context(cafile=str(new / "tls.crt"))
        review = admission_review(make_job({"bottleneck.dev/profile": "true"}))
        async with aiohttp.ClientSession() as session, session.post(url, json=review, ssl=trust) as resp:
            assert resp.status == 200
            assert "patch" in (await resp.json())["response"]


def test_the_operator_rereads_its_certificate_files(tmp_path: Path) -> None:
    server = admission_server(Settings(webhook_cert_dir=tmp_path).injection)
    assert server.certfile == str(tmp_path / "tls.crt") and server.pkeyfile == str(tmp_path / "tls.key")
    assert server.file_check_interval == CERT_CHECK_INTERVAL <= 60
