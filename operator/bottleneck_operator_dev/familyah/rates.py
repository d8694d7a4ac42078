"""What the exporters would read in each phase: per-pod signal values from the step's time account.

Values are the truth an exporter samples (gauges) or the rate a counter grows at (counters); noise,
scrapes and rate() come later (:mod:`.scrape`). GPU values are the mean over the pod's GPUs, node
values include the neighbours that share the node.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyah.roofline import Setup, Step
from bottleneck_operator_dev.familyah.scenario import Env

PHASES = ("train", "warmup", "eval", "ckpt")


@dataclass(frozen=True)
class Load:
    """Per-GPU rates of one phase (shares of time, bytes/s, FLOP/s, cores)."""

    kernel: float
    compute: float
    hbm: float
    comm: float
    tensor_fps: float
    fp32_fps: float
    dram_bps: float
    h2d_bps: float
    comm_bps: float
    read_bps: float
    decode_cores: float
    main_cores: float
    stall: float


def load_of(s: Setup, st: Step, phase: str) -> Load:
    """The per-GPU rates of ``phase`` (train, warmup, eval or ckpt)."""
    p, t = st.parts, st.step_s
    if phase == "eval":
        t = max(st.kernel_s / 3 + p["launch"] / 3 + p["h2d"], st.input_s)
        return Load(
            st.kernel_s / 3 / t,
            p["compute"] / 3 / t,
            p["hbm"] / 3 / t,
            0.0,
            st.tensor_flops / 3 / t,
            st.fp32_flops / 3 / t,
            st.dram_bytes / 3 / t,
            st.h2d_bytes / t,
            0.0,
            st.read_bytes / t,
            st.decode_cpu_s / t,
            0.8,
            p["hostmem"] / 3 / t,
        )
    if phase == "ckpt":
        return Load(0.02, 0.0, 0.02, 0.0, 0.0, 0.0, 0.01 * s.gpu.hbm_bps, 2e8, 0.0, 0.0, 0.0, 1.0, 0.0)
    k = 0.3 if phase == "warmup" else 1.0
    return Load(
        k * min(1.0, (st.kernel_s + p["comm"]) / t),
        k * p["compute"] / t,
        k * p["hbm"] / t,
        k * p["comm"] / t,
        k * st.tensor_flops / t,
        k * st.fp32_flops / t,
        k * st.dram_bytes / t,
        k * st.h2d_bytes / t,
        k * st.comm_bytes / t,
        k * st.read_bytes / t,
        k * st.decode_cpu_s / t,
        1.0 if phase == "warmup" else 0.5 + 0.5 * min(1.0, p["launch"] / max(st.kernel_s, 1e-9)),
        k * p["hostmem"] / t,
    )


def gpu_values(s: Setup, env: Env, ld: Load) -> dict[str, float]:
    """dcgm-exporter's fields of one pod in one phase (mean over its GPUs)."""
    g = s.gpu
    sm = min(1.0, ld.compute * 0.92 + ld.hbm * 0.8 + ld.comm * 0.12 + 0.02 * ld.kernel)
    dram = min(0.92, ld.dram_bps / g.hbm_bps)
    tensor = min(0.95, ld.tensor_fps / (g.tensor_flops * s.clock))
    load = 0.2 * ld.kernel + 0.5 * sm + 0.3 * dram
    cap = g.tdp_w * env.power_cap
    power = min(cap, g.idle_w + (g.tdp_w - g.idle_w) * load)
    rdma_pcie = ld.comm_bps if s.pods > 1 and s.fabric is not None and s.fabric.rdma else 0.0
    p2p = ld.comm_bps if st_link(s) == "pcie" else 0.0
    nvlink = ld.comm_bps if g.nvlink_bps and s.gpus_per_pod > 1 else 0.0
    return {
        "gpu_util": min(1.0, ld.kernel),
        "mem_copy_util": min(1.0, dram * 1.25),
        "fb_used_frac": env.fb_frac,
        "power_w": power,
        "sm_clock_mhz": g.boost_mhz * s.clock * (1.0 if ld.kernel > 0.05 else 0.75),
        "nvlink_total_bps": 2 * nvlink,
        "gr_engine_active": min(1.0, ld.kernel * 0.97),
        "tensor_active": tensor,
        "dram_active": dram,
        "pcie_tx_bps": 2e6 + rdma_pcie + p2p,
        "pcie_rx_bps": 4e6 + ld.h2d_bps + rdma_pcie + p2p,
        "sm_active": sm,
        "sm_occupancy": min(1.0, ld.compute * 0.35 + ld.hbm * 0.65 + ld.comm * 0.05),
        "nvlink_tx_bps": nvlink,
        "nvlink_rx_bps": nvlink,
        "fp32_active": min(1.0, ld.fp32_fps / (g.fp32_flops * s.clock)),
        "fp16_active": min(1.0, 0.3 * ld.fp32_fps / (g.fp32_flops * s.clock)),
        "power_limit_w": cap,
        "clock_slowdown_frac": 1.0 if env.power_cap < 0.97 and load > 0.45 else 0.0,
        "xid_code": 0.0,
    }


def st_link(s: Setup) -> str:
    """The link an intra-node all-reduce crosses: nvlink, pcie, or none (one GPU per pod)."""
    if s.gpus_per_pod <= 1:
        return "none"
    return "nvlink" if s.gpu.nvlink_bps else "pcie"


def _cpu(s: Setup, env: Env, ld: Load) -> tuple[float, float]:
    """(cores the pod uses, share of its CFS periods throttled)."""
    g = s.gpus_per_pod
    want = g * (ld.main_cores + ld.decode_cores) + 0.2
    cores = min(want, g * (s.cpu_avail + 1.0))
    if env.cpu_limit is None:
        return cores, 0.0
    cores = min(cores, env.cpu_limit)
    throttled = 0.85 if s.cpu_limited and ld.decode_cores > 0 else min(0.3, 0.5 * max(0.0, want / env.cpu_limit - 0.6))
    return cores, throttled
