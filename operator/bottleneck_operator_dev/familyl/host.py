"""Storage, memory and network as family L's hosts show them (true signals, rates per second).

Reads from local disks show on the block device (node_disk_*, cAdvisor fs reads, the pod's io.stat);
reads from NFS/EFS show as network receive with readers in D state; reads from an HTTP object store
show as network receive alone (readers wait in socket receive, not in iowait). Host-memory pressure
shows as reclaim and swap-in: memory PSI, major faults, swap use, system CPU, little free memory.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyl.truth import GIB, Arr, Phases, noise, shares
from bottleneck_operator_dev.familyl.workloads import Scenario


def io_truth(rng: np.random.Generator, sc: Scenario, ph: Phases, n: int, neighbour_io: float) -> dict[str, Arr]:
    """Storage reads of the pod, and what its node shows of them (plus neighbours' reads)."""
    f, st = shares(sc), sc.storage
    # A pod's read share is its pipelines' busy time against what the storage gives one client.
    read = np.clip(f["read"] * ph.input * noise(rng, n, 0.12), 0, 1)
    bps = read * st.read_bps * rng.uniform(0.75, 0.92)
    local = bps if st.local else 0.0 * bps
    remote = 0.0 * bps if st.local else bps
    disk_busy = np.clip(read * rng.uniform(0.6, 1.0) + neighbour_io, 0, 1) if st.local else np.full(n, neighbour_io)
    stall = read * sc.workers / max(sc.workers + sc.gpus, 1) if st.dstate else 0.0 * read
    ckpt_tx = ph.ckpt * rng.uniform(0.3, 1.0) * 1.2e9
    block = rng.uniform(128e3, 1e6)
    return {
        "fs_read_bps": local,
        "sc_io_read_bps": local,
        "node_disk_read_bps": local + neighbour_io * 4e8,
        "node_disk_reads_ps": (local + neighbour_io * 4e8) / block,
        "node_disk_busy_frac": disk_busy,
        "node_psi_io_some": np.clip(stall * 0.9 + 0.02 * neighbour_io, 0, 1),
        "node_psi_io_full": np.clip(stall * 0.5, 0, 1),
        "sc_psi_io_some": np.clip(stall * 0.95, 0, 1),
        "sc_psi_io_full": np.clip(stall * 0.6, 0, 1),
        "sc_procs_iowait": np.round(stall * sc.workers * rng.uniform(0.5, 1.0)),
        "_remote_rx": remote,
        "_ckpt_tx": ckpt_tx,
    }


def memory_truth(rng: np.random.Generator, sc: Scenario, n: int, mmap_io: Arr) -> dict[str, Arr]:
    """Host memory of the pod and its node; swap-in and reclaim scale with the swap stage's share."""
    f = shares(sc)
    press = np.clip(f["swap"] * 1.2 * noise(rng, n, 0.15), 0, 1)
    node_mem = rng.choice([256, 512, 1024, 2048]) * GIB
    limit = node_mem * rng.uniform(0.2, 0.6) if rng.random() < 0.7 else np.nan
    ws_frac = rng.uniform(0.2, 0.7) + 0.28 * np.clip(press * 5, 0, 1)
    ws = np.clip(ws_frac, 0, 0.995) * (limit if np.isfinite(limit) else node_mem * 0.5)
    swap_total = rng.random() < 0.5 or f["swap"] > 0.02
    faults = press * rng.uniform(2e4, 6e4) + rng.uniform(0, 40) + mmap_io / 65536.0
    return {
        "mem_working_set_bytes": ws,
        "mem_limit_bytes": np.full(n, limit),
        "node_mem_avail_frac": np.clip(rng.uniform(0.3, 0.8) - 0.7 * np.clip(press * 4, 0, 1), 0.01, 1),
        "node_swap_used_frac": np.clip(0.02 + press * 2.5, 0, 1) if swap_total else np.zeros(n),
        "node_majfault_ps": faults,
        "sc_majfault_ps": faults * rng.uniform(0.8, 1.0),
        "sc_swapin_ps": press * rng.uniform(1.5e4, 5e4),
        "sc_oom_kills": np.zeros(n),
        "node_psi_mem_some": np.clip(press * rng.uniform(0.8, 1.2), 0, 1),
        "node_psi_mem_full": np.clip(press * rng.uniform(0.4, 0.7), 0, 1),
        "sc_psi_mem_some": np.clip(press * rng.uniform(0.9, 1.3), 0, 1),
        "sc_psi_mem_full": np.clip(press * rng.uniform(0.5, 0.8), 0, 1),
    }


def net_truth(rng: np.random.Generator, sc: Scenario, ph: Phases, n: int, io: dict[str, Arr]) -> dict[str, Arr]:
    """Node network: remote storage reads, checkpoint writes, and collectives over TCP or RDMA."""
    f = shares(sc)
    comm = f["comm"] * ph.comm * noise(rng, n, 0.1)
    coll = comm * sc.fabric.bps * 0.85 if sc.pods > 1 else 0.0 * comm
    tcp = 0.0 * coll if sc.fabric.rdma else coll
    ib = coll if sc.fabric.rdma else 0.0 * coll
    base = rng.uniform(1e5, 5e6)
    return {
        "node_net_rx_bps": io["_remote_rx"] + tcp + base,
        "node_net_tx_bps": io["_ckpt_tx"] + tcp + base * 0.6,
        "ib_rx_bps": ib + rng.uniform(0, 1e4),
        "ib_tx_bps": ib * rng.uniform(0.97, 1.03) + rng.uniform(0, 1e4),
    }
