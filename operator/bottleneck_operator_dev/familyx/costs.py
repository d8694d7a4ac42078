"""A Job's configuration as task costs: what each task of a step takes on its resource.

Kernels from the roofline (FLOPs against the peak for the precision at the board's clock, HBM bytes
against achievable bandwidth) and the host's launch cost; reads from request latency and bytes over
the node's share of the storage; copies over PCIe, pinned or pageable; gradient buckets from the
alpha-beta cost of a ring all-reduce over the slower of the node's links and the fabric.
"""

from __future__ import annotations

import math

from bottleneck_operator_dev.familyx.graph import Kernel, RankCosts
from bottleneck_operator_dev.familyx.hardware import BUCKET_BYTES
from bottleneck_operator_dev.familyx.workload import GROUPS, Config


def _passes(cfg: Config, clock: float) -> tuple[tuple[tuple[Kernel, ...], ...], tuple[tuple[Kernel, ...], ...]]:
    """Forward and backward kernel runs per layer group: a GEMM run and an elementwise run each.

    Backward does twice the forward's math and traffic (gradients of inputs and of weights).
    """
    m, g, b = cfg.model, cfg.gpu, cfg.batch
    tensor = cfg.precision != "fp32" and not (cfg.precision == "tf32" and g.model.startswith(("Tesla", "NVIDIA L4")))
    peak = g.tensor_tflops * (0.5 if cfg.precision == "tf32" else 1.0) if tensor else g.fp32_tflops
    width = 2.0 if cfg.precision == "amp" else 4.0
    hbm = g.hbm_gbs * 1e9 * cfg.hbm_eff
    flops = m.gflops * 1e9 * b * cfg.flop_scale
    elem = m.elem_mb * 1e6 * b * width / 2.0 * cfg.elem_scale
    stretch = cfg.mem_stretch * 0.3  # page faults in the host's launch loop under memory pressure

    def runs(scale: float) -> tuple[tuple[Kernel, ...], ...]:
        f, e = flops * scale / GROUPS, elem * scale / GROUPS
        launch = cfg.launch_s * m.kernels * scale / GROUPS
        # GEMMs/convolutions: arithmetic intensity ~200 FLOP/B, a third of the launches
        gemm = Kernel(
            f / (peak * 1e12 * cfg.gemm_eff * m.gemm_eff * clock),
            f / 200.0 / hbm,
            launch / 3,
            launch / 3 * stretch,
            tensor,
        )
        rest = Kernel(
            f * 0.02 / (g.fp32_tflops * 1e12 * clock), e / hbm, launch * 2 / 3, launch * 2 / 3 * stretch, False
        )
        return ((gemm, rest),) * GROUPS

    return runs(1.0), runs(2.0)


def rank_costs(cfg: Config) -> list[RankCosts]:
    """Each representative rank's task costs (one per node, at most four)."""
    m, g, b = cfg.model, cfg.gpu, cfg.batch
    width = 2.0 if cfg.precision == "amp" else 4.0
    # the power cap: a board held at its enforced limit lowers its clock until it fits
    cap_clock = min(1.0, (cfg.power_ratio / 0.9) ** 0.8)
    per_gpu_storage = cfg.storage.gbs * 1e9 * cfg.storage_share / cfg.gpus_per_node
    read_bytes = b * m.sample_mb * 1e6 * (1 - cfg.cache_hit)
    requests = read_bytes / (cfg.storage.request_mb * 1e6)
    # a worker's requests overlap a little (readahead, client threads): latency grows as their square root
    read_latency = cfg.storage.latency_s * math.sqrt(max(requests, 1.0)) if read_bytes > 0 else 0.0
    pcie = g.pcie_gbs * 1e9 * 0.85 / cfg.switch_share * (1.0 if cfg.pinned else cfg.pageable)
    h2d = b * m.h2d_mb * 1e6 / pcie
    params = m.params_m * 1e6
    # Adam with FP32 master weights: ~28 bytes of HBM traffic per parameter, a dozen fused launches
    opt = Kernel(
        params * 2 / (g.fp32_tflops * 1e12 * cap_clock),
        params * 28 / (g.hbm_gbs * 1e9 * cfg.hbm_eff),
        cfg.launch_s * 12,
    )
    out = []
    for node, clock in enumerate(cfg.clocks):
        decode = b * m.decode_ms * 1e-3 / cfg.cpu_factor(node)
        forward, backward = _passes(cfg, clock * cap_clock)
        out.append(
            RankCosts(
                workers=cfg.workers,
                depth=cfg.workers * cfg.prefetch,
                read_latency=read_latency,
                read_xfer=read_bytes / per_gpu_storage,
                io_key="io_local" if cfg.storage.local else "io_remote",
                decode=decode,
                decode_stretch=decode * cfg.mem_stretch,
                h2d=h2d,
                h2d_stretch=0.0 if cfg.pinned else h2d * cfg.mem_stretch * 0.5,
                h2d_overlap=cfg.pinned and cfg.prefetcher,
                forward=forward,
                backward=backward,
                allreduce=allreduce(cfg, width),
                optimizer=opt,
            )
        )
    return out


def link_times(cfg: Config, nbytes: float) -> tuple[float, float, str]:
    """Seconds a ring all-reduce of ``nbytes`` spends on the intra-node and inter-node links, and the intra link's key."""
    p, gpn = cfg.ranks, cfg.gpus_per_node
    if p <= 1:
        return 0.0, 0.0, "pcie"
    factor = 2.0 * (p - 1) / p * (1.5 if cfg.fsdp else 1.0)
    nvlink = cfg.gpu.nvlink_gbs > 0
    intra_bw = (cfg.gpu.nvlink_gbs if nvlink else cfg.gpu.pcie_gbs * 0.5) * 1e9 * cfg.link_eff
    intra = factor * nbytes / intra_bw if gpn > 1 else 0.0
    inter = factor * nbytes / (cfg.fabric.gbs * 1e9 * cfg.link_eff * cfg.net_share) if cfg.nodes > 1 else 0.0
    return intra, inter, "nvlink" if nvlink else "pcie"


def allreduce(cfg: Config, width: float) -> tuple[tuple[float, str, int], ...]:
    """DDP buckets, one per backward layer group, ready after that group's last kernel run."""
    if cfg.ranks <= 1:
        return ()
    grads = cfg.model.params_m * 1e6 * width
    out = []
    for i in range(GROUPS):
        nbytes = grads / GROUPS
        intra, inter, key = link_times(cfg, nbytes)
        messages = max(1, math.ceil(nbytes / BUCKET_BYTES))
        alpha = (cfg.fabric.alpha_s if cfg.nodes > 1 else 5e-6) * 2 * (cfg.ranks - 1) * messages
        out.append((max(intra, inter) + alpha, "net" if inter > intra else key, i))
    return tuple(out)
