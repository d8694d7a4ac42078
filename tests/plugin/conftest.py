"""Fixtures of the plugin tests: kmock's Kubernetes emulator holding BottleneckReports, and a runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _plugin_support import Reports, Run

from bottleneck_operator.plugin.main import main
from bottleneck_operator_dev.demo.cluster import LocalCluster


@pytest.fixture()
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Reports]:
    """A fresh emulated API server; KUBECONFIG points at it (current context: namespace ``default``)."""
    with LocalCluster() as c:
        path = c.write_kubeconfig(tmp_path / "kubeconfig")
        monkeypatch.setenv("KUBECONFIG", str(path))
        monkeypatch.delenv("NO_COLOR", raising=False)
        yield Reports(c, path)


@pytest.fixture()
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run the plugin in-process: (exit code, stdout, stderr)."""

    def call(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's own exits (--help, a bad flag)
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return call
