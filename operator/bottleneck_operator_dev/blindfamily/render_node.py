"""What node-exporter shows on the job's nodes: the job's pods, their neighbours and the node itself.

Node-wide signals add up everything on the node, so neighbours (other teams' pods, notebooks,
data-prep jobs) inflate them: a neighbour's heavy reads make the disk busy and IO pressure high
under a job that does not read at all. The job's own pods share a node when they are packed.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.blindfamily.draft import Draft
from bottleneck_operator_dev.blindfamily.hardware import STORAGE
from bottleneck_operator_dev.blindfamily.render_host import PodLoad
from bottleneck_operator_dev.blindfamily.timeline import FloatArray, Timeline, wobble


def _capacities(d: Draft) -> dict[str, float]:
    """What the node's devices can carry per direction (totals are capped there, neighbours included)."""
    return {
        "net": d.nic_gbps * 1e9 / 8,
        "ib": d.cluster.rdma_gbps * 1e9 / 8,
        "disk": STORAGE[d.cluster.local[0]].high_bps,
    }


def _neighbours(d: Draft, rng: np.random.Generator, nodes: int, n: int) -> tuple[list[int], dict[str, FloatArray]]:
    """Other pods on each node and their summed load (they start and stop inside the window).

    Most neighbours are light (a notebook, a small service); one in five reads heavily from the
    local disk, one in ten moves a lot over the network, one in four on RDMA nodes runs its own
    multi-node job, one in twenty is short of memory.
    """
    full = d.gpus_per_node >= d.cluster.node_gpus
    cap = _capacities(d)
    counts = [
        int(rng.integers(1, 3 if full else 7)) if rng.random() < d.cluster.p_neighbours else 0 for _ in range(nodes)
    ]
    keys = ("cpu", "disk", "d", "rx", "tx", "ib", "mem", "maj", "cpu_some", "io_some", "mem_some")
    load = {k: np.zeros((nodes, n)) for k in keys}
    t = np.arange(n)
    for j, c in enumerate(counts):
        for _ in range(c):
            a, b = sorted(rng.integers(0, n + n // 2, 2) - n // 4)
            on = ((t >= a) & (t <= max(b, a + 2))).astype(np.float64) * wobble(rng, (1, n), 0.15)[0]
            heavy = rng.random(4) < (0.2, 0.1, 0.25 * bool(d.cluster.rdma), 0.05)
            load["cpu"][j] += rng.uniform(0.2, 8.0) * on
            load["disk"][j] += (rng.uniform(0.3, 0.9) * cap["disk"] if heavy[0] else rng.uniform(0, 30e6)) * on
            load["d"][j] += rng.uniform(1, 6) * heavy[0] * on
            load["rx"][j] += (rng.uniform(0.2, 0.6) * cap["net"] if heavy[1] else rng.uniform(0, 60e6)) * on
            load["tx"][j] += (rng.uniform(0.1, 0.5) * cap["net"] if heavy[1] else rng.uniform(0, 30e6)) * on
            load["ib"][j] += rng.uniform(0.05, 0.4) * cap["ib"] * heavy[2] * on
            load["mem"][j] += rng.uniform(2e9, 60e9) * (on > 0)
            load["maj"][j] += rng.uniform(0, 30) * on
            for key, lo, hi, hit in (
                ("cpu_some", 0, 0.1, True),
                ("io_some", 0.1, 0.6, heavy[0]),
                ("mem_some", 0.05, 0.4, heavy[3]),
            ):
                load[key][j] = 1 - (1 - load[key][j]) * (1 - rng.uniform(lo, hi) * hit * on)
    return counts, load


def _disk(d: Draft, tl: Timeline, block: FloatArray, swapin: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Busiest device's io_time share: the data disk, zram under swap, checkpoint writes in pauses.

    SATA and provisioned cloud volumes are busy in proportion to their throughput; NVMe reports
    100 % long before it saturates (TELEMETRY.md); under an io.max limit the device is nearly idle.
    """
    kind = d.storage if STORAGE[d.storage].path == "block" else d.cluster.local[0]
    if d.io_mode == "io.max" or STORAGE[d.storage].path != "block":
        cap = STORAGE[kind].high_bps * float(rng.uniform(0.6, 1.0))
    else:
        cap = d.storage_bps
    amp = (
        float(rng.uniform(1.3, 2.5))
        if kind.startswith("nvme") and d.io_mode != "mmap"
        else float(rng.uniform(1.0, 1.1))
    )
    busy = block / cap * amp
    if rng.random() < 0.5:
        busy = np.maximum(busy, (1 - tl.active)[None, :] * float(rng.uniform(0.3, 1.0)))
    zram = swapin * float(rng.uniform(3e-6, 8e-6)) * (d.swap == "zram")
    out: FloatArray = np.clip(np.maximum(busy, zram), 0.0, 1.0)
    return out


def node_signals(
    d: Draft, tl: Timeline, pods: PodLoad, rng: np.random.Generator
) -> tuple[dict[str, FloatArray], list[int], dict[str, FloatArray]]:
    """Node-exporter signals as each pod sees its node (pods, samples), each pod's neighbour count, and
    the pod's own part of the node's network bytes ("rx", "tx", (pods, samples)).

    The pod's own part is what its network namespace carries: its storage reads and socket
    collectives (``PodLoad.net_rx`` / ``net_tx``; RDMA is in ``ib_*`` only) and a quarter of the
    node's background shared among the job's pods on it (the rest is kubelet, daemons and
    exporters). Where the NIC caps the node's count, every sender on the node is held back alike.
    """
    p, n = pods.cpu.shape
    of = np.arange(p) // min(d.pods_per_node, p)
    nodes = int(of.max()) + 1
    m = np.zeros((nodes, p))
    m[of, np.arange(p)] = 1.0
    counts, nb = _neighbours(d, rng, nodes, n)
    cap = _capacities(d)
    cpus, mem_total = float(d.cluster.node_cpus), d.cluster.node_mem_gb * 1e9
    swapin = m @ pods.swapin
    rx, tx = m @ pods.net_rx + nb["rx"], m @ pods.net_tx + nb["tx"]
    daemons = rng.uniform(0.5, 2.5, (nodes, 1))
    kswapd = swapin * float(rng.uniform(4e-6, 1.2e-5))
    busy = m @ pods.cpu + nb["cpu"] + daemons + (rx + tx) / float(rng.uniform(2e9, 4e9)) + kswapd
    iowait = np.minimum(np.maximum(cpus - busy, 0.0), (m @ pods.d_tasks + nb["d"]) * float(rng.uniform(0.6, 0.95)))
    block = m @ pods.block_bps
    zram_bytes = swapin * 4096 * (d.swap == "zram")
    req = STORAGE[d.storage].request_bytes or 128e3
    if d.io_mode == "mmap":
        req = float(rng.uniform(16e3, 64e3))
    sig = {
        "node_cpus": np.full((nodes, n), cpus),
        "node_cpu_busy_frac": np.clip(busy / cpus, 0.0, 1.0),
        "node_cpu_iowait_frac": np.clip(iowait / cpus + 0.002 * rng.standard_normal((nodes, n)), 0.0, 1.0),
        "node_cpu_system_frac": np.clip((m @ pods.sys + nb["cpu"] * 0.1 + daemons * 0.3 + kswapd) / cpus, 0.0, 1.0),
        "node_disk_read_bps": np.minimum(block + nb["disk"], cap["disk"])
        + zram_bytes
        + rng.uniform(0, 2e6, (nodes, n)),
        "node_disk_reads_ps": block / min(req, 256e3) + swapin * (d.swap == "zram") + nb["disk"] / 128e3,
        "node_disk_busy_frac": np.maximum(_disk(d, tl, block, swapin, rng), np.clip(nb["disk"] / 1.5e9, 0, 1)),
        # the backgrounds are kept (walrus) for the pods' own share, without moving any draw
        "node_net_rx_bps": np.minimum(rx + (bg_rx := rng.uniform(0.2e6, 5e6, (nodes, 1))), cap["net"] * 0.98),
        "node_net_tx_bps": np.minimum(tx + (bg_tx := rng.uniform(0.1e6, 3e6, (nodes, 1))), cap["net"] * 0.98),
        "node_majfault_ps": m @ pods.majfault + nb["maj"] + rng.uniform(0, 10, (nodes, n)),
        **_memory(d, m @ pods.ws + nb["mem"], mem_total, rng),
        **_psi(m, pods, nb, np.clip(busy / cpus, 0, 1), rng),
    }
    if d.cluster.rdma:
        ib_rx = m @ pods.ib_rx + nb["ib"] + rng.uniform(1e3, 2e4, (nodes, 1))
        ib_tx = m @ pods.ib_tx + nb["ib"] * rng.uniform(0.8, 1.2) + rng.uniform(1e3, 2e4, (nodes, 1))
        sig["ib_rx_bps"], sig["ib_tx_bps"] = np.minimum(ib_rx, cap["ib"] * 0.97), np.minimum(ib_tx, cap["ib"] * 0.97)
    on_node = m.sum(axis=1)[:, None]
    own = {
        "rx": _own(pods.net_rx, rx + bg_rx, bg_rx / on_node, cap["net"] * 0.98, of),
        "tx": _own(pods.net_tx, tx + bg_tx, bg_tx / on_node, cap["net"] * 0.98, of),
    }
    return {k: v[of] for k, v in sig.items()}, [counts[j] for j in of], own


# The share of a node's background network bytes that its job's pods send and receive themselves
# (their metrics, logs and DNS); the rest is the kubelet's, the daemons' and the exporters'.
_OWN_BACKGROUND = 0.25


def _own(part: FloatArray, total: FloatArray, bg: FloatArray, cap: float, of: FloatArray) -> FloatArray:
    """The pods' own bytes: their part plus their share of the node's background, scaled down with
    the node's total where the NIC caps it (so the pods on a node never add up to more than it)."""
    scale = np.minimum(1.0, cap / np.maximum(total, 1.0))
    out: FloatArray = (part + _OWN_BACKGROUND * bg[of]) * scale[of]
    return out


def _memory(d: Draft, used: FloatArray, total: float, rng: np.random.Generator) -> dict[str, FloatArray]:
    """MemAvailable share and swap use: a full node for host-memory mechanisms, room otherwise."""
    kernel = float(rng.uniform(8e9, 30e9))
    avail = np.clip(1.0 - (used + kernel) / total, 0.05, 0.95)
    if d.mechanism in ("host-swap", "host-reclaim"):
        avail = np.full_like(used, float(rng.uniform(0.01, 0.05)))
    avail = np.clip(avail + 0.004 * rng.standard_normal(used.shape), 0.003, 1.0)
    if d.mechanism == "host-swap":
        swap = np.clip(float(rng.uniform(0.35, 0.9)) + np.linspace(0, 0.05, used.shape[1]), 0, 1) * np.ones_like(used)
    elif d.swap != "none" or rng.random() < d.cluster.p_swap:
        swap = np.full_like(used, float(rng.uniform(0.0, 0.15)))
    else:
        swap = np.zeros_like(used)
    return {"node_mem_avail_frac": avail, "node_swap_used_frac": swap}


def _psi(
    m: FloatArray, pods: PodLoad, nb: dict[str, FloatArray], busy: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    """Node PSI: "some" if any task on the node waits (pods and neighbours together).

    "full" needs every non-idle task stalled, so busy neighbours dilute it.
    """

    def some(key: str, extra: FloatArray) -> FloatArray:
        free = np.exp(m @ np.log(np.clip(1 - pods.psi[key], 1e-6, 1.0))) * (1 - extra)
        out: FloatArray = np.clip(1 - free + 0.003 * rng.standard_normal(free.shape), 0.0, 1.0)
        return out

    dilute = 1 - 0.7 * np.minimum(1.0, nb["cpu"] / 4.0)
    return {
        "node_psi_cpu_some": some("cpu_some", 1 - (1 - nb["cpu_some"]) * (1 - np.clip((busy - 0.85) * 5, 0, 1))),
        "node_psi_io_some": some("io_some", nb["io_some"]),
        "node_psi_io_full": np.clip(np.minimum(1.0, m @ pods.psi["io_full"]) * dilute, 0, 1),
        "node_psi_mem_some": some("mem_some", nb["mem_some"]),
        "node_psi_mem_full": np.clip(np.minimum(1.0, m @ pods.psi["mem_full"]) * dilute, 0, 1),
    }
