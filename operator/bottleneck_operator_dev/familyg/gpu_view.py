"""What dcgm-exporter shows of a design: per-pod GPU levels while training and while paused.

Each field follows NVIDIA's definition (DCGM profiling metrics guide; NVML ``nvmlUtilization_t``):

- ``GPU_UTIL``: share of time any kernel ran, so collectives overlapped with backward count as busy
  while idle gaps waiting for input do not;
- ``SM_ACTIVE``: share of time an SM had a warp resident, averaged over SMs; warps waiting on memory
  count, so HBM-bound kernels read high; NCCL kernels occupy only a few SMs (its channels);
- ``PIPE_TENSOR_ACTIVE``: tensor pipe issue rate, 1.0 being every other cycle; GEMMs in BF16/FP16
  reach 0.4-0.8, TF32 less, plain FP32 next to none;
- ``DRAM_ACTIVE``: share of cycles the memory interface was busy, ~0.8 in practice at saturation;
- ``PCIE_*_BYTES``, ``NVLINK_*_BYTES``: bytes per second including protocol headers;
- ``POWER_USAGE`` below ``POWER_MGMT_LIMIT`` always; a job whose demand exceeds the limit runs at it
  with its clocks lowered, and its clock-event reasons carry the power-cap bit.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyg.design import Design

Levels = dict[str, np.ndarray]

# Per precision: tensor pipe activity inside math kernels, FP32 and FP16 pipe activity.
_PIPES = {
    "bf16": ((0.4, 0.8), (0.02, 0.08), (0.04, 0.12)),
    "fp16": ((0.4, 0.8), (0.02, 0.08), (0.08, 0.2)),
    "tf32": ((0.2, 0.45), (0.05, 0.15), (0.0, 0.02)),
    "fp32": ((0.0, 0.03), (0.45, 0.75), (0.0, 0.02)),
}
# PCIe TLP headers on top of the payload (DCGM counts both): 5-15 % for 256-512 B payloads.
_HEADERS = (1.05, 1.15)


def _u(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return rng.uniform(lo, hi, n)


def link_bytes(d: Design, rng: np.random.Generator) -> dict[str, float]:
    """Bytes per GPU per micro-batch over each link, from stage times and link capacities.

    A collective runs at 60-85 % of a link's rate (bus bandwidth over line rate, NCCL tests); the
    host copy at 75-90 % of PCIe's.
    """
    st, b = d.stages, d.cluster.board
    eff = float(rng.uniform(0.6, 0.85))
    intra_link = b.nvlink_bps if b.nvlink_bps > 0 else b.pcie_bps
    per_gpu_fabric = d.cluster.fabric.rate_bps / max(d.gpus, 1)
    return {
        "h2d": st.h2d * b.pcie_bps * float(rng.uniform(0.75, 0.9)),
        "intra": st.intra / st.accum * intra_link * eff,
        "inter": st.inter / st.accum * min(per_gpu_fabric, b.pcie_bps) * eff,
    }


def gpu_levels(d: Design, rng: np.random.Generator, links: dict[str, float]) -> tuple[Levels, Levels]:
    """Per-pod dcgm-exporter levels (signal units), training and paused, shape (pods,) each."""
    st, b, n = d.stages, d.cluster.board, d.pods
    t = st.step * rng.normal(1.0, 0.02, n)
    f_math, f_hbm = st.math / t, st.hbm / t
    comm_all = np.minimum(1.0, st.comm / t)
    busy = np.minimum(1.0, (st.kernels + st.exposed_comm) / t)
    tp, fp32, fp16 = (_u(rng, *r, n) for r in _PIPES[d.workload.precision])
    sm = f_math * _u(rng, 0.85, 0.97, n) + f_hbm * _u(rng, 0.75, 0.95, n) + comm_all * _u(rng, 0.05, 0.2, n)
    dram = f_math * _u(rng, 0.1, 0.3, n) + f_hbm * _u(rng, 0.65, 0.82, n) + comm_all * 0.04
    tensor = f_math * tp + f_hbm * 0.01
    hdr = _u(rng, *_HEADERS, n)
    gdr = links["inter"] if d.cluster.fabric.gpudirect and d.pods > 1 else 0.0
    p2p = links["intra"] if b.nvlink_bps == 0 else 0.0
    nvl = links["intra"] if b.nvlink_bps > 0 else 0.0
    capped = d.clock_factor < 0.97
    intensity = np.clip(0.3 + 0.55 * tensor / np.maximum(busy, 1e-3) + 0.25 * dram / np.maximum(busy, 1e-3), 0, 1)
    p_busy = b.idle_w + (b.tdp_w - b.idle_w) * intensity
    limit = d.cluster.power_limit_w
    p_busy = np.where(capped, limit * _u(rng, 0.96, 1.0, n), np.minimum(p_busy, limit * 0.99))
    train = {
        "gpu_util": np.minimum(1.0, busy + _u(rng, 0.0, 0.03, n)),
        "gr_engine_active": busy * _u(rng, 0.93, 0.99, n),
        "sm_active": np.minimum(1.0, sm),
        "sm_occupancy": np.minimum(1.0, f_math * _u(rng, 0.15, 0.4, n) + f_hbm * _u(rng, 0.4, 0.8, n)),
        "tensor_active": np.minimum(1.0, tensor),
        "fp32_active": np.minimum(1.0, f_math * fp32 + f_hbm * 0.08),
        "fp16_active": np.minimum(1.0, f_math * fp16 + f_hbm * 0.06),
        "dram_active": np.minimum(0.85, dram),
        "mem_copy_util": np.minimum(1.0, dram * _u(rng, 0.95, 1.25, n)),
        "pcie_rx_bps": (links["h2d"] + gdr + p2p) / t * hdr,
        "pcie_tx_bps": (0.02 * links["h2d"] + gdr + p2p) / t * hdr,
        "nvlink_tx_bps": nvl / t,
        "nvlink_rx_bps": nvl / t,
        "nvlink_total_bps": 2 * nvl / t,
        "power_w": b.idle_w + (p_busy - b.idle_w) * busy,
        # boards of one model differ by a few per cent at the same power (silicon, cooling)
        "sm_clock_mhz": b.max_clock
        * d.clock_factor
        * _u(rng, 0.96, 1.0, n)
        * np.where(busy > 0.3, 0.99, _u(rng, 0.7, 0.95, n)),
        "clock_slowdown_frac": np.full(n, 0.85 if capped else 0.02),
        "power_limit_w": np.full(n, limit),
        "fb_used_frac": _u(rng, *d.workload.fb_frac, n),
        "xid_code": np.zeros(n),
    }
    pause = {k: v * 0.02 for k, v in train.items()}
    pause.update(
        power_w=np.full(n, b.idle_w * 1.1),
        sm_clock_mhz=b.max_clock * _u(rng, 0.3, 0.7, n),
        pcie_tx_bps=_u(rng, 0.5e9, 3e9, n),  # the state dict copied to host for the checkpoint
        clock_slowdown_frac=np.zeros(n),
        power_limit_w=train["power_limit_w"],
        fb_used_frac=train["fb_used_frac"],
        xid_code=train["xid_code"],
    )
    return train, pause
