"""The pod's own network bytes: /proc/net/dev of the collector's network namespace, loopback left out."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from _sidecar_support import samples, write_proc
from prometheus_client import generate_latest

from bottleneck_operator.sidecar.netdev import NetBytes, parse_net_dev
from bottleneck_operator.sidecar.reader import Identity, Reader
from bottleneck_operator.sidecar.service import CollectorOptions, build

IDENTITY = Identity(namespace="ml", pod="train-0", node="gpu-node-1", pod_uid="")
LABELS = (("namespace", "ml"), ("node", "gpu-node-1"), ("pod", "train-0"))
# As a pod's namespace shows it: loopback, the pod's end of its veth, and a second CNI interface.
NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 5000000     100    0    0    0     0          0         0  5000000     100    0    0    0     0       0          0
  eth0: 7340032000 5120000  0    3    0     0          0         0 104857600  80000    0    0    0     0       0          0
  net1:  1000000    900    0    0    0     0          0         0  2000000   1800    0    0    0     0       0          0
"""


def _proc(tmp_path: Path, net_dev: str | None) -> Path:
    root = write_proc(tmp_path / "proc", {1: ("pause", "S"), 7: ("python", "R")})
    if net_dev is not None:
        (root / "net").mkdir()
        (root / "net" / "dev").write_text(net_dev)
    return root


def _render(tmp_path: Path, net_dev: str | None, *, network: bool = True) -> str:
    options = CollectorOptions(
        cgroup_root=tmp_path / "nowhere", proc_root=_proc(tmp_path, net_dev), gpu=False, network=network
    )
    _, _, registry = build(options, IDENTITY)
    return generate_latest(registry).decode()


def test_the_pods_interfaces_are_summed_and_loopback_left_out() -> None:
    assert parse_net_dev(NET_DEV) == NetBytes(received=7340032000 + 1000000, sent=104857600 + 2000000)


def test_only_loopback_reads_zero_and_odd_files_are_refused() -> None:
    only_lo = "\n".join(NET_DEV.splitlines()[:3])
    assert parse_net_dev(only_lo) == NetBytes(0, 0)
    with pytest.raises(ValueError, match="no interface"):
        parse_net_dev("Inter-|   Receive |  Transmit\n face |bytes |bytes\n")
    with pytest.raises(ValueError, match="eth0"):
        parse_net_dev(NET_DEV.replace(" 104857600", ""))
    with pytest.raises(ValueError):
        parse_net_dev(NET_DEV.replace("7340032000", "lots"))


def test_the_counters_are_exposed_with_the_pods_labels(tmp_path: Path) -> None:
    got = samples(_render(tmp_path, NET_DEV))
    assert got[("bottleneck_sidecar_network_receive_bytes_total", LABELS)] == 7341032000
    assert got[("bottleneck_sidecar_network_transmit_bytes_total", LABELS)] == 106857600


def test_turned_off_or_unreadable_means_absent_with_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert "network_" not in _render(tmp_path / "off", NET_DEV, network=False)
    with caplog.at_level(logging.WARNING):
        reader = Reader(cgroup_root=tmp_path / "nowhere", proc_root=_proc(tmp_path / "bad", "garbage: 1 2\n"))
        assert reader.snapshot().network is None
        assert reader.snapshot().network is None
    assert sum("net/dev malformed" in r.getMessage() for r in caplog.records) == 1
    missing = Reader(cgroup_root=tmp_path / "nowhere", proc_root=_proc(tmp_path / "none", None))
    assert missing.snapshot().network is None


def test_this_machines_namespace_leaves_loopback_out() -> None:
    """On the real file: 1.6 MB sent to itself over loopback is in lo's line and not in the count."""
    reader = Reader(identity=IDENTITY, processes=False)
    if reader.snapshot().network is None:
        pytest.skip("no /proc/net/dev here")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        for _ in range(200):
            s.sendto(b"x" * 8192, s.getsockname())
    text = Path("/proc/net/dev").read_text()
    split = (line.partition(":") for line in text.splitlines() if "|" not in line)
    lines = {name.strip(): rest.split() for name, sep, rest in split if sep}
    every_rx = sum(int(f[0]) for f in lines.values())
    counted = parse_net_dev(text)
    assert int(lines["lo"][0]) >= 200 * 8192
    assert every_rx - counted.received == int(lines["lo"][0])
    assert counted.received >= 0 and counted.sent >= 0
