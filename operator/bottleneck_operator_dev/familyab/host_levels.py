"""What cAdvisor, kube-state-metrics, the collector and node-exporter report, per phase.

Pod signals (cAdvisor, the collector) see the pod's own cgroup; node signals (node-exporter) see
the whole node: this Job's pods on it plus its neighbours, which move them too. Reads of kernel
clients (local disks, NFS, Lustre) block in D state and show as iowait and io pressure; HTTP
object-store readers wait in socket receive and show only as network bytes and their own CPU
(TELEMETRY.md). Memory-mapped datasets read through major faults.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyab.breakdown import Breakdown
from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.gpu_levels import Levels, Rng, lv
from bottleneck_operator_dev.familyab.stages import Stages

GIB = 2**30


@dataclass(frozen=True)
class PodUse:
    """One pod's use of its node per phase: cores, block reads, network bytes, D-state tasks."""

    cores: Levels
    block_read_bps: Levels
    net_rx_bps: Levels  # what crosses the pod's own interfaces
    net_tx_bps: Levels
    storage_rx_bps: Levels  # network-storage reads through the node's kernel (NFS, Lustre)
    dstate: Levels
    majfault_ps: Levels
    swapin_ps: Levels


def throttled_share(usage: Levels, limit: float) -> Levels:
    """Share of CFS periods throttled: nearly all once usage nears the quota, and some well before
    it because multi-threaded loaders burst through a 100 ms period's quota early (assumed shape)."""
    u = np.clip(usage / limit, 0.0, 1.0)
    return np.where(u >= 0.9, 0.6 + 0.35 * np.clip((u - 0.9) / 0.1, 0.0, 1.0), 0.5 * u**4)


def pod_use(cfg: Config, st: Stages, b: Breakdown, rng: Rng) -> PodUse:
    """Cores, bytes and blocked tasks of one pod, per phase."""
    f, t = st.flows, b.step
    read_bps = f.read_bytes / t
    cores_train = b.loader_cores + b.main_cores
    cores = lv(cores_train, cfg.gpus_per_pod * 1.0 + 0.1, 0.8 * b.main_cores + 0.5 * b.loader_cores, 0.0)
    if cfg.cpu_limit:
        cores = np.minimum(cores, cfg.cpu_limit * 0.98)
    swapin = b.stall * float(rng.uniform(2e3, 3e4)) if cfg.swap else 0.0
    refault = b.stall * float(rng.uniform(2e3, 2e4))
    memmap = read_bps / 131072 if cfg.fmt == "memmap" else 0.0  # one fault per 128 KiB readahead
    block = read_bps if cfg.storage.local else 0.0
    pods_here = min(cfg.pods, cfg.pods_per_node)
    tcp = f.inter_bytes_node / pods_here / t if cfg.nic and not cfg.nic.rdma else 0.0
    obj = read_bps if cfg.storage.kind == "object" else 0.0
    ckpt_obj = f.ckpt_bytes / cfg.pods / f.ckpt_s if cfg.ckpt_storage.kind == "object" else 0.0
    kernel_net = read_bps if cfg.storage.kernel_client and not cfg.storage.local else 0.0
    workers = cfg.workers * cfg.gpus_per_pod
    d_train = workers * b.read_wait + 2.0 * b.stall
    return PodUse(
        cores=cores,
        block_read_bps=lv(block + swapin * 4096, 0.0, 0.5 * block, 0.0),
        net_rx_bps=lv(obj + tcp + 2e4, 1e4, 0.5 * obj, 1e3),
        net_tx_bps=lv(tcp + 2e4, ckpt_obj + 1e4, 1e4, 1e3),
        storage_rx_bps=lv(kernel_net, 0.0, 0.5 * kernel_net, 0.0),
        dstate=lv(d_train, 1.0 if cfg.ckpt_storage.kernel_client else 0.0, 0.5 * d_train, 0.0),
        majfault_ps=lv(memmap + refault + swapin, 5.0, 0.5 * memmap + refault, 0.0),
        swapin_ps=lv(swapin, swapin, swapin, 0.0),
    )


def pod_levels(cfg: Config, st: Stages, b: Breakdown, use: PodUse, node_busy: Levels) -> dict[str, Levels]:
    """cAdvisor, kube-state-metrics and collector signals of one pod, per phase."""
    f = st.flows
    ws = min(f.ws_gib, cfg.mem_limit_gib * 0.99) if cfg.mem_limit_gib else f.ws_gib
    stall = lv(b.stall, b.stall, b.stall, 0.0)
    workers = cfg.workers * cfg.gpus_per_pod
    io_some = 1.0 - (1.0 - min(b.read_wait, 0.999)) ** min(workers, 8)
    ckpt_io = 0.5 if cfg.ckpt_storage.kernel_client else 0.0
    per_worker = b.loader_cores / max(workers, 1)
    launch_heavy = b.main_cores / cfg.gpus_per_pod >= 0.9
    out: dict[str, Levels] = {
        "cpu_cores": use.cores,
        "sc_cpu_cores": use.cores + 0.02,  # the pod cgroup includes the collector itself
        "mem_working_set_bytes": lv(ws, ws + min(4.0, f.ckpt_bytes / cfg.pods / GIB), ws, 0.05) * GIB,
        "mem_limit_bytes": lv(*[cfg.mem_limit_gib * GIB if cfg.mem_limit_gib else np.nan] * 4),
        "fs_read_bps": use.block_read_bps,
        "sc_io_read_bps": use.block_read_bps,
        "sc_majfault_ps": use.majfault_ps,
        "sc_swapin_ps": use.swapin_ps,
        "sc_net_rx_bps": use.net_rx_bps,
        "sc_net_tx_bps": use.net_tx_bps,
        "sc_psi_io_some": np.clip(lv(io_some, ckpt_io, 0.5 * io_some, 0.0) + 0.5 * stall, 0.0, 1.0),
        "sc_psi_io_full": np.clip(lv(b.read_wait**2 * 0.8, ckpt_io * 0.3, 0.2 * b.read_wait**2, 0.0), 0.0, 1.0),
        "sc_psi_mem_some": np.clip(stall * 1.3, 0.0, 1.0),
        "sc_psi_mem_full": np.clip(stall * 0.6, 0.0, 1.0),
        "sc_procs_running": lv(cfg.gpus_per_pod * 0.8 + b.loader_cores, cfg.gpus_per_pod, cfg.gpus_per_pod, 0.0),
        "sc_procs_iowait": use.dstate,
        "sc_procs_busy": lv(
            cfg.gpus_per_pod * launch_heavy + workers * (per_worker >= 0.9), cfg.gpus_per_pod, 0.0, 0.0
        ),
    }
    contention = np.clip((node_busy - 0.85) * 3.0, 0.0, 1.0)
    cpu_some = 0.02 + contention
    if cfg.cpu_limit:
        thr = throttled_share(use.cores, cfg.cpu_limit)
        out["cpu_throttled_frac"] = thr
        out["sc_throttled_frac"] = thr
        out["cpu_limit_cores"] = lv(cfg.cpu_limit, cfg.cpu_limit, cfg.cpu_limit, cfg.cpu_limit)
        cpu_some = cpu_some + 0.8 * thr * np.clip(use.cores / cfg.cpu_limit, 0.0, 1.0)
    out["sc_psi_cpu_some"] = np.clip(cpu_some * np.asarray([1.0, 1.0, 1.0, 0.0]), 0.0, 1.0)
    return out


def node_busy(cfg: Config, use: PodUse) -> tuple[Levels, Levels]:
    """(busy share, kernel share) of the node's CPUs, per phase: this Job's pods, the neighbours,
    the kernel's own work for networking, network file systems and reclaim (assumed costs)."""
    pods_here = min(cfg.pods, cfg.pods_per_node)
    net = use.net_rx_bps + use.net_tx_bps + use.storage_rx_bps
    system = 0.02 * cfg.node.cpus + pods_here * (net / 2.5e9 + 0.08 * use.cores + 2.0 * use.swapin_ps / 1e4)
    total = pods_here * use.cores + cfg.nb_cpu + system
    return np.clip(total / cfg.node.cpus, 0.0, 1.0), np.clip(system / cfg.node.cpus, 0.0, 1.0)


def node_levels(
    cfg: Config, st: Stages, b: Breakdown, use: PodUse, pod: dict[str, Levels], rng: Rng
) -> dict[str, Levels]:
    """node-exporter signals of one of the Job's nodes, per phase."""
    pods_here = min(cfg.pods, cfg.pods_per_node)
    cpus = float(cfg.node.cpus)
    busy, system = node_busy(cfg, use)
    iowait = np.minimum(1.0 - busy, pods_here * use.dstate / cpus * 0.9)
    disk = pods_here * use.block_read_bps + cfg.nb_disk_bps
    sample = cfg.model.sample_kb * 1024
    request = max(4096.0, min(sample, 131072.0)) if cfg.fmt in ("files", "memmap") else 1048576.0
    reads = pods_here * use.block_read_bps / request + cfg.nb_disk_bps / 65536.0
    service = 250e-6 if cfg.storage.kind == "sata" else 60e-6
    ws = pod["mem_working_set_bytes"] / GIB
    avail = np.clip(1.0 - (pods_here * ws + cfg.nb_mem_gib + 6.0) / cfg.node.mem_gib, 0.01, 1.0)
    overshoot = max(0.0, st.flows.ws_gib - st.flows.room_gib)
    swap_used = min(0.98, overshoot / (0.1 * cfg.node.mem_gib) + 0.01) if cfg.swap else 0.0
    rdma = cfg.nic is not None and cfg.nic.rdma
    # Lustre over an RDMA fabric (LNet o2ib) reads through the fabric, not the netdev counters.
    lustre_ib = use.storage_rx_bps if rdma and cfg.storage.kind == "lustre" else 0.0 * use.storage_rx_bps
    comm = lv(st.flows.inter_bytes_node / b.step if rdma else 0.0, 0.0, 0.0, 0.0)  # per direction
    net_rx = pods_here * (use.net_rx_bps + use.storage_rx_bps) - lustre_ib + cfg.nb_net_bps * 0.6
    net_tx = pods_here * use.net_tx_bps + cfg.nb_net_bps * 0.4
    if cfg.ckpt_storage.kernel_client and not cfg.ckpt_storage.local:  # NFS/Lustre writeback from the host
        net_tx = net_tx + lv(0.0, st.flows.ckpt_bytes / cfg.nodes / st.flows.ckpt_s, 0.0, 0.0)
    neighbour_io = float(rng.uniform(0.0, 0.05))
    return {
        "node_cpus": lv(cpus, cpus, cpus, cpus),
        "node_cpu_busy_frac": busy,
        "node_cpu_iowait_frac": iowait,
        "node_cpu_system_frac": system,
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": reads,
        "node_disk_busy_frac": 1.0 - np.exp(-reads * service),
        "node_mem_avail_frac": avail,
        "node_swap_used_frac": lv(swap_used, swap_used, swap_used, swap_used),
        "node_majfault_ps": pods_here * use.majfault_ps + float(rng.uniform(5.0, 200.0)),
        "node_net_rx_bps": net_rx,
        "node_net_tx_bps": net_tx,
        "ib_rx_bps": comm + lustre_ib + cfg.nb_rdma_bps,
        "ib_tx_bps": comm + cfg.nb_rdma_bps,
        "node_psi_cpu_some": np.clip((busy - 0.75) * 3.0, 0.0, 1.0) + 0.01,
        "node_psi_io_some": np.clip(pod["sc_psi_io_some"] + neighbour_io, 0.0, 1.0),
        "node_psi_io_full": np.clip(pod["sc_psi_io_full"] * 0.5, 0.0, 1.0),
        "node_psi_mem_some": np.clip(pod["sc_psi_mem_some"] + (avail < 0.05) * 0.3, 0.0, 1.0),
        "node_psi_mem_full": np.clip(pod["sc_psi_mem_full"] * 0.4, 0.0, 1.0),
    }
