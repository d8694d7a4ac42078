"""Interconnect: two data-parallel ranks exchanging 64 MiB gradients over a 1 Gbit/s veth.

The script makes a network namespace for the peer rank (the "other node") and a veth pair between
it and the recorded pod's namespace, both ends shaped by ``tc tbf`` to 1 Gbit/s. The host end is
named ``fab0``: it stands for the node's fabric NIC, which node-exporter reports (and the analysis
reads) like any physical interface. Each step computes for 50 ms on the virtual GPU, then the ranks
swap their gradient tensors (numpy arrays over TCP) and average them, as a two-rank all-reduce does.
"""

from __future__ import annotations

from typing import Any

from recordings.cgroups import Counters, Limits
from recordings.harness import Context, Scenario
from recordings.netns import ShapedLink

# 125 MB/s each way: 250 MB/s both ways, well above the 100 MB/s per GPU under which the analysis
# reads balanced traffic as something other than gradient exchange; the ranks send and receive from
# the arrays' own memory, so they can move more than the link carries and the link binds
RATE = "1gbit"
LINK = ShapedLink("bnr-recording-peer", "fab0", "fab1", "10.254.77.1", "10.254.77.2", RATE)
PEER_IP = LINK.peer_ip
GRAD_BYTES = 64 << 20
COMPUTE_S = 0.05
PORT = 29500  # the peer listens on it, rank 0 connects to it


def fabric_up(ctx: Context) -> None:
    LINK.up()


def fabric_down(ctx: Context) -> None:
    LINK.down()


def start_peer(ctx: Context, port: int, grad_bytes: int, compute_s: float) -> None:
    """Start rank 1, listening behind the link: the other node, outside the recorded pod's cgroup."""
    ctx.spawn(["allreduce", "--rank", "1", "--host", PEER_IP, "--port", str(port), "--grad-bytes", str(grad_bytes),
               "--compute-s", str(compute_s)], prefix=LINK.inside, join=False)  # fmt: skip


def _launch(ctx: Context) -> None:
    start_peer(ctx, PORT, GRAD_BYTES, COMPUTE_S)
    common = ["--port", str(PORT), "--grad-bytes", str(GRAD_BYTES), "--compute-s", str(COMPUTE_S)]
    ctx.spawn(["allreduce", "--rank", "0", "--host", PEER_IP, *common, "--progress", str(ctx.progress_file(0))])


def _figures(ctx: Context, first: Counters, last: Counters, dt: float) -> dict[str, Any]:
    return {"link_rate": RATE, "gradient_bytes": GRAD_BYTES}


SCENARIO = Scenario(
    name="interconnect",
    label="Interconnect",
    mechanism="network",
    limited=f"a {RATE}/s veth (tc tbf) between the recorded rank and its peer's network namespace",
    limits=Limits(),
    compute_s=COMPUTE_S,
    h2d_bytes=0.0,
    launch=_launch,
    setup=fabric_up,
    teardown=fabric_down,
    extra_figures=_figures,
)

if __name__ == "__main__":
    from recordings.__main__ import main

    main(["interconnect"])
