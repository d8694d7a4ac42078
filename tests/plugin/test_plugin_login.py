"""The plugin logs in as kubectl does: exec credential plugins, OIDC id-tokens, contexts, KUBECONFIG lists.

Each login is checked where it matters: the bearer token the emulated API server received.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _plugin_support import Reports, Run, io_status

from bottleneck_operator.kube import CredentialsError
from bottleneck_operator.kube.kubeconfig import load


def _tokens(reports: Reports) -> list[str]:
    """The Authorization headers of the requests the emulator last received."""
    assert reports.cluster.emulator is not None
    return [str(r.headers.get("Authorization", "")) for r in reports.cluster.emulator]


def _credential_plugin(tmp_path: Path, token: str, *, version: str, fail: bool = False) -> Path:
    """A small exec credential plugin: prints an ExecCredential, records what kubectl would pass it."""
    script = tmp_path / "bin" / "fake-auth"
    script.parent.mkdir(exist_ok=True)
    body = (
        "import json, os, sys\n"
        f"open({str(tmp_path / 'exec-info.json')!r}, 'w').write(json.dumps({{'info': os.environ.get("
        "'KUBERNETES_EXEC_INFO'), 'args': sys.argv[1:], 'region': os.environ.get('FAKE_REGION')}))\n"
    )
    if fail:
        body += "sys.stderr.write('the session expired: log in again\\n'); sys.exit(3)\n"
    else:
        cred = {"apiVersion": version, "kind": "ExecCredential", "status": {"token": token}}
        body += f"print(json.dumps({cred!r}))\n"
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _kubeconfig(path: Path, server: str, user: dict[str, Any], namespace: str = "ml") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": namespace}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.mark.parametrize("version", ["client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1"])
def test_exec_credential_plugin_token_reaches_the_api_server(
    reports: Reports, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    reports.add("ml", "train-io", io_status())
    _credential_plugin(tmp_path, "exec-token-7f3a", version=version)
    # A bare command name is found on PATH, as kubectl finds `aws` or `gke-gcloud-auth-plugin`.
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    user = {
        "exec": {
            "apiVersion": version,
            "command": "fake-auth",
            "args": ["token", "--cluster", "prod"],
            "env": [{"name": "FAKE_REGION", "value": "eu-west-1"}],
        }
    }
    path = _kubeconfig(tmp_path / "config", reports.cluster.url, user)
    code, out, err = run("show", "train-io", "--kubeconfig", str(path))
    assert code == 0, err
    assert "Namespace:     ml" in out
    assert "Bearer exec-token-7f3a" in _tokens(reports)
    seen = json.loads((tmp_path / "exec-info.json").read_text())
    assert seen["args"] == ["token", "--cluster", "prod"] and seen["region"] == "eu-west-1"
    info = json.loads(seen["info"])
    assert info["apiVersion"] == version and info["spec"]["interactive"] is False


def test_exec_command_path_is_relative_to_its_kubeconfig(reports: Reports, run: Run, tmp_path: Path) -> None:
    reports.add("ml", "train-io", io_status())
    _credential_plugin(tmp_path, "relative-token", version="client.authentication.k8s.io/v1beta1")
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "./bin/fake-auth"}}
    path = _kubeconfig(tmp_path / "config", reports.cluster.url, user)
    code, _, err = run("list", "--kubeconfig", str(path))
    assert code == 0, err
    assert "Bearer relative-token" in _tokens(reports)


def test_a_missing_exec_plugin_says_how_to_install_it(reports: Reports, run: Run, tmp_path: Path) -> None:
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "no-such-auth-plugin-here",
            "installHint": "Install it with: brew install no-such-auth-plugin",
        }
    }
    path = _kubeconfig(tmp_path / "config", reports.cluster.url, user)
    code, out, err = run("list", "--kubeconfig", str(path))
    assert code == 1 and out == ""
    assert "executable no-such-auth-plugin-here not found" in err
    assert "brew install no-such-auth-plugin" in err and "Traceback" not in err


def test_a_failing_exec_plugin_is_one_error_line(reports: Reports, run: Run, tmp_path: Path) -> None:
    script = _credential_plugin(tmp_path, "", version="client.authentication.k8s.io/v1beta1", fail=True)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(script)}}
    path = _kubeconfig(tmp_path / "config", reports.cluster.url, user)
    code, _, err = run("list", "--kubeconfig", str(path))
    assert code == 1
    assert err.startswith("error: ") and "cannot log in" in err and "session expired" in err
    assert "Traceback" not in err


def test_an_unknown_exec_version_is_refused_before_running_it(tmp_path: Path) -> None:
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v2", "command": "true"}}
    path = _kubeconfig(tmp_path / "config", "https://k:6443", user)
    with pytest.raises(CredentialsError, match=re.escape('invalid apiVersion "client.authentication.k8s.io/v2"')):
        load(str(path))


def test_oidc_auth_provider_sends_its_id_token(reports: Reports, run: Run, tmp_path: Path) -> None:
    reports.add("ml", "train-io", io_status())
    user = {"auth-provider": {"name": "oidc", "config": {"id-token": "oidc-id-token", "idp-issuer-url": "https://i"}}}
    path = _kubeconfig(tmp_path / "config", reports.cluster.url, user)
    code, _, err = run("show", "train-io", "--kubeconfig", str(path))
    assert code == 0, err
    assert "Bearer oidc-id-token" in _tokens(reports)


def test_removed_auth_providers_point_at_their_exec_plugin(tmp_path: Path) -> None:
    user = {"auth-provider": {"name": "gcp", "config": {"access-token": "x"}}}
    path = _kubeconfig(tmp_path / "config", "https://k:6443", user)
    with pytest.raises(CredentialsError, match="gke-gcloud-auth-plugin"):
        load(str(path))


def test_context_flag_and_kubeconfig_list(
    reports: Reports, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBECONFIG as a list; --context picks a context defined in the second file; -n overrides its namespace."""
    reports.add("team-a", "a", io_status())
    reports.add("team-b", "b", io_status())
    first = _kubeconfig(tmp_path / "one", reports.cluster.url, {"token": "first-token"}, namespace="team-a")
    second = tmp_path / "two"
    second.write_text(
        yaml.safe_dump(
            {
                "users": [{"name": "other", "user": {"token": "second-token"}}],
                "contexts": [{"name": "b", "context": {"cluster": "c", "user": "other", "namespace": "team-b"}}],
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(second)]))
    code, out, err = run("list")
    assert code == 0, err
    assert [line.split()[0] for line in out.strip().splitlines()[1:]] == ["a"]
    assert "Bearer first-token" in _tokens(reports)
    code, out, err = run("list", "--context", "b")
    assert code == 0, err
    assert [line.split()[0] for line in out.strip().splitlines()[1:]] == ["b"]
    assert "Bearer second-token" in _tokens(reports)
    code, out, _ = run("list", "--context", "b", "-n", "team-a")
    assert [line.split()[0] for line in out.strip().splitlines()[1:]] == ["a"]
    code, _, err = run("list", "--context", "nope")
    assert code == 1 and 'context "nope" does not exist' in err
