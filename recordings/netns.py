"""A shaped link to a network namespace of its own: the other end of a recorded pod's traffic.

The host end of the veth pair stands for the node's NIC: node-exporter reports it, and the analysis
reads it, like any physical interface (it leaves ``veth*`` names out as container plumbing, so the
ends are named otherwise). Both ends are shaped by ``tc tbf`` to the same rate.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class ShapedLink:
    """A veth pair between this namespace and ``netns``, shaped to ``rate`` each way."""

    netns: str
    host_if: str
    peer_if: str
    host_ip: str
    peer_ip: str
    rate: str  # tc's notation, "1gbit", "200mbit"
    burst: str = "1mb"

    def up(self) -> None:
        """Make the namespace and the link (anything left from an earlier run is removed first)."""
        self.down()
        _ip("netns", "add", self.netns)
        _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.peer_if)
        _ip("link", "set", self.peer_if, "netns", self.netns)
        _ip("addr", "add", f"{self.host_ip}/30", "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")
        _ip("-n", self.netns, "addr", "add", f"{self.peer_ip}/30", "dev", self.peer_if)
        _ip("-n", self.netns, "link", "set", self.peer_if, "up")
        _ip("-n", self.netns, "link", "set", "lo", "up")
        tbf = ["root", "tbf", "rate", self.rate, "burst", self.burst, "latency", "100ms"]
        subprocess.run(["tc", "qdisc", "add", "dev", self.host_if, *tbf], check=True)
        subprocess.run(["ip", "netns", "exec", self.netns, "tc", "qdisc", "add", "dev", self.peer_if, *tbf], check=True)

    def down(self) -> None:
        subprocess.run(["ip", "link", "del", self.host_if], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", self.netns], check=False, capture_output=True)

    @property
    def inside(self) -> list[str]:
        """The command prefix that runs a process in the namespace."""
        return ["ip", "netns", "exec", self.netns]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True)
