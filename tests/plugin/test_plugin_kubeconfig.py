"""The kubeconfig as kubectl reads it: merged files, relative paths, token files, contexts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from _plugin_support import Reports, Run, io_status

from bottleneck_operator.kube import CredentialsError
from bottleneck_operator.kube.kubeconfig import load


def _write(path: Path, **config: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", **config}))
    return path


def test_files_merge_first_wins_and_paths_are_relative_to_their_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _write(
        tmp_path / "a" / "config",
        contexts=[{"name": "work", "context": {"cluster": "prod", "user": "me", "namespace": "ml"}}],
        clusters=[{"name": "prod", "cluster": {"server": "https://first:6443/", "certificate-authority": "ca.crt"}}],
        **{"current-context": "work"},
    )
    second = _write(
        tmp_path / "b" / "config",
        clusters=[{"name": "prod", "cluster": {"server": "https://second:6443"}}],
        users=[{"name": "me", "user": {"tokenFile": "token", "client-certificate": "/abs/me.crt"}}],
        **{"current-context": "elsewhere"},
    )
    (tmp_path / "b" / "token").write_text("s3cret\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)]))
    target = load()
    assert target.context == "work" and target.namespace == "ml"
    creds = target.credentials
    assert creds.server == "https://first:6443"  # the first file naming the cluster wins
    assert creds.ca_path == str(tmp_path / "a" / "ca.crt")  # relative to the file that names it
    assert creds.token_file == str(tmp_path / "b" / "token") and creds.certificate_path == "/abs/me.crt"


def test_context_namespace_defaults_to_default(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "config",
        contexts=[{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        clusters=[{"name": "k", "cluster": {"server": "https://k", "insecure-skip-tls-verify": True}}],
        users=[{"name": "u", "user": {"username": "admin", "password": "pw"}}],
    )
    with pytest.raises(CredentialsError, match="no current context"):
        load(str(path))
    target = load(str(path), "c")
    assert target.namespace == "default"
    assert target.credentials.insecure and target.credentials.username == "admin"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"contexts": [{"name": "c", "context": {"cluster": "gone", "user": "u"}}]}, 'cluster "gone" does not exist'),
        (
            {"contexts": [{"name": "c", "context": {"cluster": "k"}}], "clusters": [{"name": "k", "cluster": {}}]},
            "no server",
        ),
        ("- not a mapping", "not a kubeconfig"),
    ],
)
def test_broken_kubeconfigs_say_what_is_wrong(tmp_path: Path, config: object, message: str) -> None:
    path = tmp_path / "config"
    if isinstance(config, dict):
        _write(path, **config)
    else:
        path.write_text(str(config))
    with pytest.raises(CredentialsError, match=message):
        load(str(path), "c")


def test_token_file_login_reaches_the_emulator(reports: Reports, run: Run, tmp_path: Path) -> None:
    reports.add("ml", "train-io", io_status())
    (tmp_path / "creds").mkdir()
    (tmp_path / "creds" / "token").write_text("emulator")
    path = _write(
        tmp_path / "creds" / "config",
        contexts=[{"name": "e", "context": {"cluster": "e", "user": "e", "namespace": "ml"}}],
        clusters=[{"name": "e", "cluster": {"server": reports.cluster.url}}],
        users=[{"name": "e", "user": {"tokenFile": "token"}}],
        **{"current-context": "e"},
    )
    code, out, err = run("show", "train-io", "--kubeconfig", str(path))
    assert code == 0, err
    assert "Namespace:     ml" in out
