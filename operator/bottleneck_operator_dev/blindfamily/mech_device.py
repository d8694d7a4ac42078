"""The device-side mechanisms: links (Interconnect), the GPU's own compute, and memory.

Same shape as :mod:`.mech_input`: ``setup`` puts the cause in place, ``force`` sets its one free
quantity within ``Draft.bounds`` so the stage takes the seconds asked.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.blindfamily.draft import RDMA_EFF, Draft, comm_loads
from bottleneck_operator_dev.blindfamily.workloads import gpu_rate


def _multi_node(d: Draft, rng: np.random.Generator) -> None:
    """Spread the job over at least two nodes, one pod each, so its all-reduce crosses the network."""
    d.pods_per_node = 1
    if d.n_pods < 2:
        d.n_pods = int(rng.choice([2, 2, 4, 4, 8, 16]))
    if d.k < 2 and rng.random() < 0.7:
        d.k = min(d.cluster.node_gpus, int(rng.choice([4, 8])))


def _grad_bounds(d: Draft) -> None:
    lo, hi = d.arch.params
    d.bounds = (lo * d.arch.grad_bytes * 0.5, hi * d.arch.grad_bytes * 2.0)


def ethernet(d: Draft, rng: np.random.Generator) -> bool:
    """Multi-node all-reduce over TCP (NCCL's socket transport): netdev bytes near the NIC's rate.

    On RDMA clusters this is the pod that was not given the RDMA device: NCCL falls back to sockets.
    """
    _multi_node(d, rng)
    d.rdma_bps, d.gdr = 0.0, False
    d.tags.append("nccl-socket-fallback" if d.cluster.rdma else "ethernet")
    _grad_bounds(d)
    return True


def rdma(d: Draft, rng: np.random.Generator) -> bool:
    """Multi-node all-reduce over InfiniBand/RoCE, often on fewer rails than the node has.

    RDMA traffic shows only in the infiniband counters; with GPUDirect RDMA also as symmetric PCIe
    on each GPU. A misconfigured NCCL_IB_HCA (one rail of eight) is the common way to starve it.
    """
    if not d.cluster.rdma:
        return False
    _multi_node(d, rng)
    rails = float(rng.choice([1.0, 0.5, 0.25, 0.125]))
    d.rdma_bps = d.cluster.rdma_gbps * 1e9 / 8 * float(rng.uniform(*RDMA_EFF)) * rails
    d.gdr = rng.random() < 0.75
    d.tags += [d.cluster.rdma, *(["gpudirect-rdma"] if d.gdr else []), *(["few-rails"] if rails < 1 else [])]
    _grad_bounds(d)
    return True


def pcie_p2p(d: Draft, rng: np.random.Generator) -> bool:
    """Several GPUs in one PCIe box without NVLink: the ring runs over PCIe, often across sockets."""
    if d.board.nvlink_bps > 0:
        return False
    d.k = int(rng.choice([g for g in (2, 4, 8) if g <= d.cluster.node_gpus]))
    d.n_pods, d.pods_per_node = 1, 1
    d.p2p_bps = d.board.pcie_bps * float(rng.uniform(0.3, 0.7))
    d.tags.append("pcie-only")
    _grad_bounds(d)
    return True


def nvlink_tp(d: Draft, rng: np.random.Generator) -> bool:
    """Tensor parallelism inside an NVLink node: an all-reduce of activations in every layer."""
    if d.board.nvlink_bps == 0:
        return False
    d.k = int(rng.choice([g for g in (4, 8) if g <= d.cluster.node_gpus]))
    d.n_pods, d.pods_per_node = 1, 1
    d.overlap = float(rng.uniform(0.0, 0.25))
    d.bounds = (0.0, 2e11)
    d.tags.append("tensor-parallel")
    return True


def host_to_device(d: Draft, rng: np.random.Generator) -> bool:
    """Large inputs copied each step (volumes, video, offloaded embeddings) over the GPU's PCIe link.

    Inputs go over as float32 normalised on the host, with extra channels or bigger crops; pinned
    buffers reach 70-85 % of the link, pageable ones (a bounce through a staging buffer) a quarter
    to a half. Half the jobs copy ahead on a side stream, keeping the link busy nearly all the time.
    """
    pinned = rng.random() < 0.6
    d.pcie_bps = d.board.pcie_bps * float(rng.uniform(0.7, 0.85) if pinned else rng.uniform(0.25, 0.5))
    d.h2d_overlap = rng.random() < 0.5
    lo, hi = d.arch.h2d_bytes
    d.bounds = (lo, hi * 12.0)
    d.tags += ["large-inputs", "pinned-memory" if pinned else "pageable-memory"]
    return True


def force_grad(d: Draft, x: float) -> bool:
    """The all-reduce payload at which its slowest link is busy ``x`` seconds per step."""
    loads = comm_loads(d)
    if not loads:
        return False
    d.grad_bytes = float(np.clip(d.grad_bytes * x / max(loads.values()), *d.bounds))
    return True


def force_tp(d: Draft, x: float) -> bool:
    """The tensor-parallel traffic at which NVLink is busy ``x`` seconds per step."""
    kn = d.gpus_per_node
    d.tp_bytes = float(np.clip(x * d.nvl_bps - 2.0 * (kn - 1) / kn * d.grad_bytes, *d.bounds))
    return True


def force_h2d(d: Draft, x: float) -> bool:
    """The input size at which copying a batch takes ``x`` seconds."""
    d.h2d_bytes = float(np.clip(x * d.pcie_bps / d.batch, *d.bounds))
    return True


def compute(d: Draft, rng: np.random.Generator) -> bool:
    """Tensor-core work under AMP, nothing else in the way: the healthy state."""
    return d.arch.kernel in ("gemm", "conv")


def fp32(d: Draft, rng: np.random.Generator) -> bool:
    """FP32 without TF32: the FP32 pipe does the work and tensor pipes stay idle."""
    d.kernel = "fp32"
    slow = 1.0 if d.arch.kernel == "fp32" else float(rng.uniform(0.2, 0.4))
    d.flop_rate = gpu_rate(d.arch, d.board, "fp32", rng) * slow * d.clock_ratio**0.9
    d.tags.append("fp32")
    return True


def launch(d: Draft, rng: np.random.Generator) -> bool:
    """Small batches of small kernels: a kernel is nearly always resident, few SMs have work."""
    if d.arch.kernel != "launch":
        d.batch = float(max(1, round(d.batch / float(rng.uniform(4, 32)))))
        d.tags.append("small-batch")
    d.bounds = (0.0, 0.4)
    return True


def force_launch(d: Draft, x: float) -> bool:
    d.launch_s = float(np.clip(x, *d.bounds))
    return True


def hbm(d: Draft, rng: np.random.Generator) -> bool:
    """Kernels bound by DRAM bandwidth: embeddings, gathers, unfused attention, FFTs."""
    if d.arch.kernel != "hbm":
        d.tags.append({"llm": "eager-attention", "surrogate": "fft-layers"}.get(d.arch.name, "unfused"))
    d.bounds = (1.0, 8.0)
    return True


def force_hbm(d: Draft, x: float) -> bool:
    d.hbm_ratio = float(np.clip(x * d.flop_rate / d.batch, *d.bounds))
    return True


def host_swap(d: Draft, rng: np.random.Generator) -> bool:
    """The node swaps (zram or a swap file): the trainer and its workers wait on swap-ins."""
    if d.cluster.p_swap == 0:
        return False
    d.swap = "zram" if rng.random() < 0.6 else "disk"
    d.memstall = 1e-9
    d.tags.append(f"swap-{d.swap}")
    return True


def host_reclaim(d: Draft, rng: np.random.Generator) -> bool:
    """No swap, RAM full: the kernel reclaims and refaults file pages, and kills now and then."""
    d.swap, d.memstall = "none", 1e-9
    d.tags.append("node-memory-full")
    return True


def cgroup_memory(d: Draft, rng: np.random.Generator) -> bool:
    """The pod at its own memory limit on a roomy node: MemAvailable and swap look fine.

    Node-wide PSI still counts the pod's stalls (it counts any task), but nothing else on the node does.
    """
    d.swap, d.memstall = "none", 1e-9
    d.tags.append("memory-limit")
    return True


def force_memstall(d: Draft, x: float) -> bool:
    d.memstall = x
    return True
