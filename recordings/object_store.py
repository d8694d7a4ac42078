"""IO: a loader streaming samples from an HTTP object store over a 200 Mbit/s link.

The store runs in a network namespace of its own (the storage service, off the node), behind a
veth pair shaped by ``tc tbf`` to 200 Mbit/s each way. The host end is named ``stor0``: it stands
for the node's NIC, which node-exporter reports like any physical interface. Four loader workers
fetch 1 MiB samples over HTTP, 16 a batch, as WebDataset or an S3 client streams shards; the
virtual GPU (50 ms per batch) waits for them. The workers sleep on their sockets: no process waits
in D state, the node shows no iowait and the pod no IO pressure, and no process is pinned at a core.
"""

from __future__ import annotations

from typing import Any

from recordings.cgroups import Counters, Limits
from recordings.harness import Context, Scenario
from recordings.netns import ShapedLink

RATE = "200mbit"  # 25 MB/s: 16 MiB batches at about 1.5 a second
LINK = ShapedLink("bnr-recording-store", "stor0", "stor1", "10.254.78.1", "10.254.78.2", RATE, burst="256kb")
PORT = 8080
OBJECT_BYTES = 1 << 20


def link_up(ctx: Context) -> None:
    LINK.up()


def link_down(ctx: Context) -> None:
    LINK.down()


def start_store(ctx: Context) -> str:
    """Start the store behind the shaped link, outside the recorded pod's cgroup (it is a service
    elsewhere); returns its URL."""
    ctx.spawn(["objectstore", "--host", LINK.peer_ip, "--port", str(PORT), "--object-bytes", str(OBJECT_BYTES)],
              prefix=LINK.inside, join=False)  # fmt: skip
    return f"http://{LINK.peer_ip}:{PORT}"


def _launch(ctx: Context) -> None:
    ctx.spawn(["objects", "--url", start_store(ctx), "--batch", "16", "--workers", "4",
               "--progress", str(ctx.progress_file(0))])  # fmt: skip


def _figures(ctx: Context, first: Counters, last: Counters, dt: float) -> dict[str, Any]:
    return {"link_rate": RATE, "object_bytes": OBJECT_BYTES}


SCENARIO = Scenario(
    name="objectstore",
    label="IO",
    mechanism="network-storage",
    limited=f"a {RATE}/s link (tc tbf) to an HTTP object store in its own network namespace",
    limits=Limits(),
    compute_s=0.05,
    h2d_bytes=16 * 3 * 224 * 224 * 4,
    launch=_launch,
    setup=link_up,
    teardown=link_down,
    extra_figures=_figures,
)

if __name__ == "__main__":
    from recordings.__main__ import main

    main(["objectstore"])
