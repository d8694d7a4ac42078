"""node-exporter's series for one of the Job's nodes: the Job's pods on it plus its neighbours.

Node-wide signals are shared with whatever else runs there (TELEMETRY.md): CPU modes, disk, memory,
network and PSI all include the neighbours' load. iowait accrues on idle CPUs while tasks wait on
I/O (proc(5) calls it unreliable); disk busy time is the share of time with a request in flight,
which an NVMe device reaches long before it saturates; NFS and object-store reads arrive as network
bytes, not disk reads; RDMA bypasses the netdev counters and shows on the InfiniBand port counters.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyae.hardware import GIB
from bottleneck_operator_dev.familyae.host import PAGE, PodHost
from bottleneck_operator_dev.familyae.scrape import Level
from bottleneck_operator_dev.familyae.stages import Arr
from bottleneck_operator_dev.familyae.workload import JobConfig


def _cpu_modes(cfg: JobConfig, ph: PodHost, nb: Arr, rng: np.random.Generator) -> dict[str, Level]:
    cpus = float(cfg.node.cpus)
    k = cfg.pods_per_node
    nb_cores = cfg.neighbour_cores * (0.5 + nb)
    system_other = float(rng.uniform(0.3, 1.5))
    busy = np.minimum(cpus, k * ph.cpu_used + nb_cores + system_other)
    system = np.minimum(busy, k * ph.kernel_cores + 0.1 * nb_cores + 0.3 * system_other)
    iowait = np.minimum(cpus - busy, k * ph.d_tasks * 0.8)
    idle = np.maximum(cpus - busy - iowait, 0.0)
    other = busy * 0.01  # irq, softirq, steal
    return {
        "node_cpu:user": Level(busy - system - other, counter=True, noise=0.02),
        "node_cpu:system": Level(system, counter=True, noise=0.03),
        "node_cpu:iowait": Level(iowait, counter=True, noise=0.05),
        "node_cpu:idle": Level(idle, counter=True, noise=0.01),
        "node_cpu:other": Level(other, counter=True, noise=0.05),
    }


def _disk(cfg: JobConfig, ph: PodHost, nb: Arr, rng: np.random.Generator) -> dict[str, Level]:
    k = cfg.pods_per_node
    neighbour = cfg.node.nvme_gbs * 1e9 * float(rng.uniform(0.0, 0.03)) * nb if cfg.neighbours else 0.0 * nb
    background = float(rng.uniform(1e5, 2e6))
    read = k * ph.block_read_bps + neighbour + background
    request = min(cfg.read_bytes, 256e3) if cfg.storage.local and cfg.read_ops > 0.2 else 128e3
    swap_share = np.where(read > 0, (k * (ph.block_read_bps - _local(cfg, ph))) / np.maximum(read, 1.0), 0.0)
    size = request * (1.0 - swap_share) + PAGE * swap_share
    reads_ps = read / np.maximum(size, PAGE)
    service = 1e-3 if cfg.storage.kind == "blockvol" else 0.2e-3 if cfg.storage.kind == "sata" else 0.08e-3
    return {
        "node_disk_read_bps": Level(read, counter=True, noise=0.05),
        "node_disk_reads_ps": Level(reads_ps, counter=True, noise=0.05),
        "node_disk_busy_frac": Level(1.0 - np.exp(-reads_ps * service), counter=True, noise=0.03, cap=1.0),
    }


def _local(cfg: JobConfig, ph: PodHost) -> Arr:
    """The pod's data reads from a local disk (its other block reads are swap or refaults)."""
    return ph.block_read_bps if cfg.storage.local and cfg.cache_bytes == 0 else 0.0 * ph.block_read_bps


def _memory(cfg: JobConfig, ph: PodHost, nb: Arr, rng: np.random.Generator) -> dict[str, Level]:
    total = cfg.node.mem_gib * GIB
    neighbours = total * float(rng.uniform(0.03, 0.3)) * (0.7 + 0.6 * nb) if cfg.neighbours else 0.0 * nb
    used = cfg.pods_per_node * ph.ws_bytes + neighbours + total * float(rng.uniform(0.03, 0.06))
    out = {
        "node_mem_avail_frac:avail": Level(np.clip(total - used, 0.02 * total, total), noise=0.003),
        "node_mem_avail_frac:total": Level(np.full_like(used, total)),
    }
    swap_total = float(rng.uniform(8, 64)) * GIB if cfg.swap != "none" else 0.0
    swapped = np.minimum(cfg.pods_per_node * ph.swapped, swap_total)
    out["node_swap_used_frac:total"] = Level(np.full_like(used, swap_total))
    out["node_swap_used_frac:free"] = Level(np.maximum(swap_total - swapped - 0.002 * swap_total, 0.0))
    out["node_majfault_ps"] = Level(
        cfg.pods_per_node * ph.majfault_ps + float(rng.uniform(0.5, 20.0)), counter=True, noise=0.1
    )
    return out


def _network(cfg: JobConfig, ph: PodHost, nb: Arr, rng: np.random.Generator, with_ib: bool) -> dict[str, Level]:
    k = cfg.pods_per_node
    nb_net = float(rng.uniform(1e6, 1e8)) * nb if cfg.neighbours else 0.0 * nb
    out = {
        "node_net_rx_bps": Level(k * ph.node_rx + nb_net, counter=True, noise=0.05),
        "node_net_tx_bps": Level(k * ph.node_tx + nb_net * 0.5, counter=True, noise=0.05),
    }
    if with_ib:
        nb_ib = float(rng.uniform(0.0, 3e9)) * nb if cfg.neighbours and rng.random() < 0.5 else 0.0 * nb
        out["ib_rx_bps"] = Level(k * ph.rdma_bps + nb_ib + 2e3, counter=True, noise=0.04)
        out["ib_tx_bps"] = Level(k * ph.rdma_bps + nb_ib + 2e3, counter=True, noise=0.04)
    return out


def _pressure(cfg: JobConfig, ph: PodHost, nb: Arr, busy_share: Arr) -> dict[str, Level]:
    """Node PSI: the pods' stalls seen system-wide; "full" is rarer where other tasks keep running."""
    k = cfg.pods_per_node
    others = 0.5 if cfg.neighbours else 0.85
    some = {r: 1.0 - (1.0 - np.clip(ph.psi[f"{r}_some"], 0, 1)) ** k for r in ("io", "mem")}
    cpu = np.clip(3.0 * np.maximum(busy_share - 0.85, 0.0) + 0.2 * ph.psi["cpu_some"] + 0.005 + 0.02 * nb, 0, 1)
    return {
        "node_psi_cpu_some": Level(cpu, counter=True, noise=0.05, cap=1.0),
        "node_psi_io_some": Level(np.clip(some["io"] + 0.01 * nb, 0, 1), counter=True, noise=0.05, cap=1.0),
        "node_psi_io_full": Level(ph.psi["io_full"] * others, counter=True, noise=0.05, cap=1.0),
        "node_psi_mem_some": Level(some["mem"], counter=True, noise=0.05, cap=1.0),
        "node_psi_mem_full": Level(ph.psi["mem_full"] * others, counter=True, noise=0.05, cap=1.0),
    }


def node_levels(
    cfg: JobConfig, ph: PodHost, nb: Arr, rng: np.random.Generator, *, psi: bool, ib: bool
) -> dict[str, Level]:
    """A node's node-exporter series (PSI with a kernel >= 4.20, InfiniBand counters where it has HCAs)."""
    out = {"node_cpus": Level(np.full_like(nb, float(cfg.node.cpus)))}
    modes = _cpu_modes(cfg, ph, nb, rng)
    out |= modes
    out |= _disk(cfg, ph, nb, rng)
    out |= _memory(cfg, ph, nb, rng)
    out |= _network(cfg, ph, nb, rng, ib)
    if psi:
        idle = modes["node_cpu:idle"].values + modes["node_cpu:iowait"].values
        out |= _pressure(cfg, ph, nb, 1.0 - idle / cfg.node.cpus)
    return out
