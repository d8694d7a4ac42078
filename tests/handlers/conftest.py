"""Fixtures of the operator tests: kmock's Kubernetes emulator on a local port (see operator_harness)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bottleneck_operator_dev.demo.cluster import LocalCluster


@pytest.fixture()
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    """A fresh emulated API server; KUBECONFIG points at it for the test's duration."""
    with LocalCluster() as c:
        monkeypatch.setenv("KUBECONFIG", str(c.write_kubeconfig(tmp_path / "kubeconfig")))
        yield c
