"""Host-side values of one pod in one phase: cAdvisor, kube-state-metrics, node-exporter, the collector.

The pod's own cgroup (cAdvisor, the collector) sees only the Job; the node's counters add the
neighbours'. Reads from NFS show as node network bytes, reads from object stores as the pod's own
socket bytes, RDMA collectives only on the InfiniBand port counters (and as PCIe bytes on the GPU).
"""

from __future__ import annotations

import math

from bottleneck_operator_dev.familyah.rates import Load, _cpu
from bottleneck_operator_dev.familyah.roofline import Setup
from bottleneck_operator_dev.familyah.scenario import Env


def _io(s: Setup, ld: Load) -> dict[str, float]:
    """Storage: block reads, iowait-blocked workers and io pressure of the pod's reads."""
    g = s.gpus_per_pod
    rate = g * ld.read_bps
    busy = min(1.0, rate / s.storage_bps) if s.storage_bps else 0.0
    waits = 0.0 if s.storage.http else busy
    return {
        "block": rate if s.storage.local else 0.0,
        "nfs": rate if not s.storage.local and not s.storage.http else 0.0,
        "http": rate if s.storage.http else 0.0,
        "busy": busy,
        "psi_io": min(0.95, waits**2 * 0.9),
        "d_procs": waits * s.workers * g * 0.8,
    }


def _memory(s: Setup, env: Env, ld: Load) -> dict[str, float]:
    """Host memory: working set, faults and swap-ins when the footprint overflows."""
    over = s.mem_over
    stalled = ld.stall
    pages = (s.swap_bps * min(1.0, stalled * 1.2)) / 4096.0 if over > 1.0 else 0.0
    cap = env.mem_limit if env.mem_limit is not None else env.node_mem
    ws = min(env.footprint, cap * 0.99)
    node_used = (ws + env.neighbours * 8e9) / env.node_mem
    avail = max(0.01, 1.0 - node_used) if env.mem_limit is not None else (0.02 if over > 1.0 else 1.0 - node_used)
    return {
        "ws": ws,
        "limit": env.mem_limit if env.mem_limit is not None else math.nan,
        "avail": min(0.95, max(0.01, avail)),
        "swap": (0.3 + 0.5 * min(1.0, over - 1.0)) if over > 1.0 and env.swap else (0.01 if env.swap else 0.0),
        "faults": pages + 2.0,
        "swapins": pages,
        "psi_some": min(0.95, stalled * 1.3),
        "psi_full": min(0.9, stalled * 0.8),
    }


def host_values(s: Setup, env: Env, ld: Load) -> dict[str, float]:
    """Every host signal of one pod in one phase."""
    g = s.gpus_per_pod
    cores, throttled = _cpu(s, env, ld)
    io, mem = _io(s, ld), _memory(s, env, ld)
    tcp = g * ld.comm_bps if s.pods > 1 and s.fabric is not None and not s.fabric.rdma else 0.0
    rdma = g * ld.comm_bps if s.pods > 1 and s.fabric is not None and s.fabric.rdma else 0.0
    node_busy = min(1.0, (cores + env.neighbour_cpu + 0.5) / env.node_cpus)
    starved = max(0.0, g * (ld.main_cores + ld.decode_cores) - cores) / max(cores, 1.0)
    system = 0.02 + 0.4 * mem["psi_some"] * cores / env.node_cpus + tcp / 4e10
    return {
        "cpu_cores": cores,
        "mem_working_set_bytes": mem["ws"],
        "mem_limit_bytes": mem["limit"],
        "fs_read_bps": io["block"],
        "cpu_throttled_frac": throttled,
        "cpu_limit_cores": env.cpu_limit if env.cpu_limit is not None else math.nan,
        "node_cpus": float(env.node_cpus),
        "node_cpu_busy_frac": node_busy,
        "node_cpu_iowait_frac": min(1.0 - node_busy, io["d_procs"] * 0.5 / env.node_cpus),
        "node_cpu_system_frac": min(node_busy, system),
        "node_disk_read_bps": io["block"] + env.neighbour_disk_bps + mem["swapins"] * 4096,
        "node_disk_reads_ps": (io["block"] + env.neighbour_disk_bps) / s.storage.io_size + mem["swapins"],
        "node_disk_busy_frac": min(1.0, io["busy"] if s.storage.local else 0.02 + env.neighbour_disk_bps / 2e9),
        "node_mem_avail_frac": mem["avail"],
        "node_swap_used_frac": mem["swap"],
        "node_majfault_ps": mem["faults"] + env.neighbours * 3.0,
        "node_net_rx_bps": io["nfs"] + io["http"] + tcp + env.neighbour_net_bps + 1e5,
        "node_net_tx_bps": tcp + env.neighbour_net_bps * 0.5 + 1e5 + (ld.h2d_bps if ld.kernel < 0.05 else 0.0),
        "node_psi_cpu_some": min(0.95, max(0.0, node_busy - 0.8) * 3.0 + 0.02),
        "node_psi_io_some": io["psi_io"] + 0.01,
        "node_psi_io_full": io["psi_io"] * 0.6,
        "node_psi_mem_some": mem["psi_some"],
        "node_psi_mem_full": mem["psi_full"],
        "ib_rx_bps": rdma,
        "ib_tx_bps": rdma,
        "sc_psi_cpu_some": min(0.95, 0.9 * throttled + 0.5 * min(1.0, starved) + 0.01),
        "sc_psi_io_some": io["psi_io"],
        "sc_psi_io_full": io["psi_io"] * 0.6,
        "sc_psi_mem_some": mem["psi_some"],
        "sc_psi_mem_full": mem["psi_full"],
        "sc_cpu_cores": cores + 0.02,
        "sc_throttled_frac": throttled,
        "sc_io_read_bps": io["block"],
        "sc_majfault_ps": mem["faults"],
        "sc_swapin_ps": mem["swapins"],
        "sc_oom_kills": 0.0,
        "sc_procs_running": g + min(float(s.workers * g), g * ld.decode_cores),
        "sc_procs_iowait": io["d_procs"],
        "sc_procs_busy": g * min(float(s.workers), ld.decode_cores) * (1.0 if ld.decode_cores > 0.9 else 0.0),
        "sc_net_rx_bps": io["http"] + tcp + 1e4,
        "sc_net_tx_bps": tcp + 1e4,
    }
