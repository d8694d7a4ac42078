"""The console script and the krew manifest: what `kubectl bottleneck` needs to be found and installed."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from _plugin_support import Reports, io_status

from bottleneck_operator.plugin import krew

ROOT = Path(__file__).resolve().parents[2]


def test_console_script_is_declared() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-bottleneck"] == "bottleneck_operator.plugin.main:main"


def test_manifest_is_a_krew_plugin_for_linux_and_darwin() -> None:
    manifest = yaml.safe_load((ROOT / "plugins" / "bottleneck.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "bottleneck"
    spec = manifest["spec"]
    assert spec["version"].startswith("v") and spec["shortDescription"] and "pip install" in spec["caveats"]
    platforms = {(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]) for p in spec["platforms"]}
    assert platforms == {(o, a) for o in ("linux", "darwin") for a in ("amd64", "arm64")}
    digest = hashlib.sha256(krew.archive_bytes()).hexdigest()
    for p in spec["platforms"]:
        assert p["uri"].startswith("https://") and p["bin"] == "kubectl-bottleneck"
        assert p["sha256"] == digest, "rebuild the archive digest: python -m bottleneck_operator.plugin.krew dist"


def test_archive_is_reproducible_and_holds_the_launcher() -> None:
    first, second = krew.archive_bytes(), krew.archive_bytes()
    assert first == second
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"kubectl-bottleneck", "LICENSE"}
        assert members["kubectl-bottleneck"].mode == 0o755


def _launcher(tmp_path: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(krew.archive_bytes()), mode="r:gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "kubectl-bottleneck"


def test_launcher_runs_the_plugin(tmp_path: Path) -> None:
    env = {**os.environ, "BOTTLENECK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT / "operator")}
    proc = subprocess.run([_launcher(tmp_path), "explain", "GPU"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("CLASS:    GPU")


def test_launcher_without_the_package_says_what_to_install(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # a python3 on PATH that lacks the package (a bare interpreter, no site-packages, no PYTHONPATH)
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([_launcher(tmp_path), "list"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    assert "pip install bottleneck-operator" in proc.stderr


def test_kubectl_finds_and_runs_the_plugin(tmp_path: Path, reports: Reports) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    reports.add("ml", "train-io", io_status())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = _launcher(bin_dir)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "BOTTLENECK_PYTHON": sys.executable,
        "PYTHONPATH": str(ROOT / "operator"),
        "KUBECONFIG": str(reports.kubeconfig),
    }
    found = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env, timeout=60)
    assert str(launcher) in found.stdout
    proc = subprocess.run(
        [kubectl, "bottleneck", "list", "-n", "ml"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].split()[:3] == ["train-io", "train-io", "IO"]
    proc = subprocess.run(
        [kubectl, "bottleneck", "show", "ghost", "-n", "ml"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 1
    assert 'Error from server (NotFound): bottleneckreports.bottleneck.dev "ghost" not found' in proc.stderr


def test_release_sums_and_the_manifest_made_from_them_match_the_archives(tmp_path: Path) -> None:
    """`make dist`'s last steps: the archive, SHA256SUMS over the artefacts, the manifest from SHA256SUMS."""
    dist = tmp_path / "dist"
    assert krew.main(["archive", str(dist)]) == 0
    (dist / "bottleneck_operator-9.9.9-py3-none-any.whl").write_bytes(b"a wheel stands in here")
    assert krew.main(["sums", str(dist)]) == 0
    sums = krew.read_sums(dist / krew.SUMS)
    # Every artefact is listed with its own digest, as `sha256sum -c` would check it.
    assert set(sums) == {krew.ARCHIVE, "bottleneck_operator-9.9.9-py3-none-any.whl"}
    for name, digest in sums.items():
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest
    out = tmp_path / "bottleneck.yaml"
    assert krew.main(["manifest", str(dist / krew.SUMS), "--version", "9.9.9", "--output", str(out)]) == 0
    manifest = yaml.safe_load(out.read_text())
    assert manifest["spec"]["version"] == "v9.9.9"
    archive_digest = hashlib.sha256((dist / krew.ARCHIVE).read_bytes()).hexdigest()
    for p in manifest["spec"]["platforms"]:
        assert p["sha256"] == archive_digest
        assert p["uri"].endswith(f"/v9.9.9/{krew.ARCHIVE}")


def test_a_sums_file_without_the_archive_is_refused(tmp_path: Path) -> None:
    sums = tmp_path / krew.SUMS
    sums.write_text(f"{'0' * 64}  bottleneck-operator-0.1.0.tgz\n")
    with pytest.raises(SystemExit, match=r"lists no kubectl-bottleneck\.tar\.gz"):
        krew.main(["manifest", str(sums), "--version", "0.1.0"])
    sums.write_text("not a sum\n")
    with pytest.raises(SystemExit, match="not a sha256sum line"):
        krew.read_sums(sums)


def test_the_committed_manifest_is_the_generated_one() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    committed = (ROOT / "plugins" / "bottleneck.yaml").read_text()
    assert committed == krew.manifest_text(version, krew.sha256()), "regenerate it: make dist"
