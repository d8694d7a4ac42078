"""The pod's own network bytes, from the ``/proc/net/dev`` of the network namespace the collector shares.

Every container of a pod shares one network namespace, so the collector's ``/proc/net/dev`` lists the
pod's interfaces (its ``eth0`` end of the veth, any extra CNI interfaces), not the node's. It counts
what crosses the kernel's network stack: reads from network storage, socket collectives, checkpoint
writes. RDMA (InfiniBand, RoCE) bypasses the stack and is not in it. A pod with ``hostNetwork: true``
shares the node's namespace instead: there the count is the node's, and the webhook turns it off.

The format (``net/core/net-procfs.c``): two header lines, then one line per interface,
``<name>: <16 numbers>``, eight receive fields then eight transmit fields, bytes first in each.
"""

from __future__ import annotations

from dataclasses import dataclass

# The loopback interface carries traffic between the pod's own processes, never into or out of the pod.
LOOPBACK = "lo"
_FIELDS = 16


@dataclass(frozen=True)
class NetBytes:
    """Bytes received and sent over the pod's interfaces since they came up, loopback left out."""

    received: int
    sent: int


def parse_net_dev(text: str) -> NetBytes:
    """Sum the receive and transmit byte counters of every interface but loopback.

    Raises:
        ValueError: no interface line, or a line that is not ``<name>: <16 integers>``.
    """
    received = sent = 0
    seen = 0
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or "|" in line:  # the two header lines
            continue
        fields = rest.split()
        if len(fields) != _FIELDS:
            raise ValueError(f"interface {name.strip()!r}: {len(fields)} fields, expected {_FIELDS}")
        seen += 1
        if name.strip() == LOOPBACK:
            continue
        received += int(fields[0])
        sent += int(fields[8])
    if not seen:
        raise ValueError("no interface listed")
    return NetBytes(received, sent)
