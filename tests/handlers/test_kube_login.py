"""The operator started outside a cluster logs in with the user's kubeconfig, exec credential plugins included.

The plugin is a small program on disk, run as kubectl runs it; the token it prints is checked where it
matters: in the Authorization header the emulated API server received from the reports client.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml

from bottleneck_operator.contract.times import rfc3339
from bottleneck_operator.errors import EXIT_USAGE
from bottleneck_operator.handlers.operator import SERVICE_ACCOUNT_TOKEN, kube_login
from bottleneck_operator.kube import Credentials, CredentialsError, KubeClient, Resource
from bottleneck_operator_dev.demo.cluster import LocalCluster

REPORTS = Resource("bottleneck.dev", "v1alpha1", "BottleneckReport", "bottleneckreports")
EXEC = "client.authentication.k8s.io/v1"


def _plugin(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "bin" / "fake-auth"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!{sys.executable}\nimport json, sys\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _kubeconfig(tmp_path: Path, server: str, user: dict[str, Any]) -> Path:
    path = tmp_path / "config"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ml"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _login(monkeypatch: pytest.MonkeyPatch, config: Path) -> Any:
    assert not SERVICE_ACCOUNT_TOKEN.exists(), "these tests run outside a cluster"
    monkeypatch.setenv("KUBECONFIG", str(config))
    return kube_login(kopf.OperatorSettings(), logging.getLogger("test"))()


def test_an_exec_plugin_token_reaches_the_api_server_with_its_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expires = time.time() + 900
    status = {"token": "exec-token-91c2", "expirationTimestamp": rfc3339(expires)}
    _plugin(
        tmp_path, f"print(json.dumps({{'apiVersion': {EXEC!r}, 'kind': 'ExecCredential', 'status': {status!r}}}))\n"
    )
    with LocalCluster() as cluster:
        # a command path relative to the kubeconfig, as kubectl resolves it
        info = _login(
            monkeypatch,
            _kubeconfig(tmp_path, cluster.url, {"exec": {"apiVersion": EXEC, "command": "./bin/fake-auth"}}),
        )
        assert info.token == "exec-token-91c2" and info.default_namespace == "ml"
        assert info.expiration is not None and abs(info.expiration.timestamp() - expires) < 1.0

        async def read() -> None:
            client = KubeClient(lambda: Credentials.from_login(info))
            try:
                assert await client.list(REPORTS, "ml") == []
            finally:
                await client.close()

        asyncio.run(read())
        assert cluster.emulator is not None
        assert "Bearer exec-token-91c2" in [str(r.headers.get("Authorization", "")) for r in cluster.emulator]


def test_a_failing_plugin_says_what_it_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path, "sys.stderr.write('the SSO session expired: run aws sso login\\n'); sys.exit(3)\n")
    config = _kubeconfig(
        tmp_path, "https://127.0.0.1:6443", {"exec": {"apiVersion": EXEC, "command": "./bin/fake-auth"}}
    )
    with pytest.raises(CredentialsError, match=r"exited 3: the SSO session expired: run aws sso login"):
        _login(monkeypatch, config)


def test_a_plugin_without_a_credential_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _kubeconfig(
        tmp_path, "https://127.0.0.1:6443", {"exec": {"apiVersion": EXEC, "command": "./bin/fake-auth"}}
    )
    _plugin(tmp_path, "print('not json')\n")
    with pytest.raises(CredentialsError, match="no ExecCredential"):
        _login(monkeypatch, config)
    _plugin(tmp_path, f"print(json.dumps({{'apiVersion': {EXEC!r}, 'status': {{}}}}))\n")
    with pytest.raises(CredentialsError, match="neither a token nor a client certificate"):
        _login(monkeypatch, config)


def test_a_token_file_is_read_at_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("file-token-55\n")
    info = _login(monkeypatch, _kubeconfig(tmp_path, "https://127.0.0.1:6443", {"tokenFile": "token"}))
    assert info.token == "file-token-55" and info.expiration is None
    assert info.server == "https://127.0.0.1:6443"


def test_run_stops_with_exit_2_when_the_plugin_fails(tmp_path: Path) -> None:
    _plugin(tmp_path, "sys.stderr.write('the SSO session expired: run aws sso login\\n'); sys.exit(3)\n")
    config = _kubeconfig(
        tmp_path, "https://127.0.0.1:6443", {"exec": {"apiVersion": EXEC, "command": "./bin/fake-auth"}}
    )
    env = {**os.environ, "KUBECONFIG": str(config)}
    cmd = [
        sys.executable,
        "-m",
        "bottleneck_operator",
        "run",
        "--prometheus-url",
        "http://127.0.0.1:9",
        "--metrics-port",
        "0",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == EXIT_USAGE, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "run aws sso login" in done.stderr.splitlines()[-1]
