"""Drawing one Job's training setup, biased towards an intended mechanism.

The bias works on demand ratios: each stage's time per step over the GPU's kernel time. The
intended stage draws a ratio above 1, the others below, and the physical parameters (storage
throughput, workers and CPU limit, copy sizes, gradient bytes, memory limit) are solved from those
ratios within the ranges real hardware allows. Clipping to those ranges, the overlaps and the
per-batch noise decide what actually limits the loop: the label comes from the counterfactual
runs (:mod:`.label`), never from this intent.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyak.hardware import BOARD_BY_KEY, FABRIC_GBPS, GB, PCIE_GBS, Board, Fabric
from bottleneck_operator_dev.familyak.hostdraws import draw_host
from bottleneck_operator_dev.familyak.spec import JobSpec, Model
from bottleneck_operator_dev.familyak.stages import HBM_PRACTICAL, MATMUL_EFFICIENCY, RDMA_EFFICIENCY, TCP_EFFICIENCY
from bottleneck_operator_dev.familyak.workloads import WORKLOADS, loguniform, pick

M = Mechanism
HOT = (1.15, 3.5)  # the intended stage's demand over the GPU's kernel time
COOL = (0.05, 0.8)  # every other stage's

_STAGE_OF = {
    M.LOCAL_DISK: "io",
    M.NETWORK_STORAGE: "io",
    M.THROTTLED: "cpu",
    M.SATURATED: "cpu",
    M.TOO_FEW_WORKERS: "cpu",
    M.PCIE: "h2d",
    M.NVLINK: "intra",
    M.NETWORK: "inter",
    M.LAUNCH_BOUND: "launch",
    M.HBM_BANDWIDTH: "hbm",
}
_WORKLOAD_WEIGHTS: dict[str, dict[str, float]] = {
    "io": {"cnn": 0.35, "audio": 0.3, "video": 0.35},
    "cpu": {"cnn": 0.5, "audio": 0.3, "video": 0.2},
    "h2d": {"recsys": 0.4, "video": 0.4, "cnn": 0.2},
    "intra": {"transformer": 0.8, "cnn": 0.2},
    "inter": {"transformer": 0.8, "cnn": 0.2},
    "launch": {"transformer": 0.6, "recsys": 0.4},
    "hbm": {"recsys": 0.5, "cnn": 0.3, "transformer": 0.2},
    "compute": {"transformer": 0.5, "cnn": 0.3, "audio": 0.2},
    "hostmem": {"cnn": 0.4, "audio": 0.3, "recsys": 0.3},
}
_BOARD_WEIGHTS = {"v100": 0.1, "a100": 0.3, "h100": 0.25, "h100pcie": 0.08, "l4": 0.1, "a10": 0.1, "t4": 0.07}


def hot_stage(mechanism: Mechanism, rng: np.random.Generator) -> str:
    """The stage an intended mechanism overloads (PCIe: the copies, or the all-reduce of a board without NVLink)."""
    if mechanism is M.PCIE and rng.random() < 0.4:
        return "p2p"
    if mechanism is M.HOST_MEMORY_PRESSURE:
        return "hostmem"
    return _STAGE_OF.get(mechanism, "compute")


def _ratios(rng: np.random.Generator, hot: str) -> dict[str, float]:
    """Demand over GPU kernel time per stage; ``hbm`` is HBM-bound time over matmul time."""
    r = {k: loguniform(rng, *COOL) for k in ("io", "cpu", "h2d", "launch", "intra", "inter", "hbm")}
    if hot == "compute":
        r["hbm"] = loguniform(rng, 0.05, 0.7)
    elif hot == "hostmem":
        for k in ("io", "cpu", "launch"):
            r[k] = rng.uniform(0.45, 0.85)
    else:
        r["intra" if hot == "p2p" else hot] = loguniform(rng, *HOT)
    if rng.random() < 0.2:  # a runner-up close to the GPU itself: the close calls real clusters have
        runner = str(rng.choice(["io", "cpu", "h2d", "launch"]))
        if runner != hot:
            r[runner] = rng.uniform(0.8, 1.0)
    return r


def _board(rng: np.random.Generator, hot: str) -> Board:
    weights = dict(_BOARD_WEIGHTS)
    if hot == "intra":
        weights = {"v100": 0.4, "a100": 0.4, "h100": 0.2}
    elif hot == "p2p":
        weights = {"h100pcie": 0.3, "l4": 0.25, "a10": 0.25, "t4": 0.2}
    elif hot == "launch":
        weights = {"a100": 0.4, "h100": 0.5, "h100pcie": 0.1}
    return BOARD_BY_KEY[pick(rng, weights)]


def _topology(rng: np.random.Generator, board: Board, hot: str) -> tuple[int, int, Fabric, float]:
    """(GPUs per pod, pods, fabric, port rate in Gb/s)."""
    sizes = [g for g in (1, 2, 4, 8) if g <= board.max_gpus]
    gpus = int(rng.choice(sizes))
    pods = 1
    if hot == "intra":
        gpus = int(rng.choice([4, 8]))
    elif hot == "p2p":
        gpus = int(rng.choice([2, 4]))
    elif hot == "inter":
        pods = int(rng.choice([2, 4, 8]))
    elif rng.random() < 0.3:
        pods = int(rng.choice([2, 4]))
    if pods == 1:
        return gpus, 1, Fabric.NONE, 0.0
    if hot == "inter":
        fabric = Fabric(pick(rng, {"ethernet": 0.6, "roce": 0.25, "infiniband": 0.15}))
    else:
        fabric = Fabric(pick(rng, {"ethernet": 0.15, "roce": 0.35, "infiniband": 0.5}))
    return gpus, pods, fabric, float(rng.choice(FABRIC_GBPS[fabric]))


def power_clock(cap: float) -> float:
    """The SM clock share under a power cap (the same rule :mod:`.stages` applies)."""
    return float(min(1.0, cap**0.6))


def _model(
    rng: np.random.Generator, wl: str, board: Board, hot: str, r: dict[str, float], cap: float
) -> tuple[Model, int]:
    """The GPU work of a drawn batch, with HBM-bound kernels sized against the matmuls by the drawn ratio."""
    w = WORKLOADS[wl]
    amp = bool(rng.random() < 0.8)
    fill = rng.uniform(0.85, 1.0) if hot != "launch" else rng.uniform(0.2, 0.5)
    e = loguniform(rng, 1.3, 4.0) if hot == "hbm" else r["hbm"]
    peak = board.tflops * 1e12 * (1.0 if amp else board.fp32_ratio) * power_clock(cap) * fill * MATMUL_EFFICIENCY
    gflop = loguniform(rng, *w.gflop)
    batch = int(loguniform(rng, *w.batch))
    if hot == "launch":  # small steps: a few samples of a small model
        batch, gflop = max(1, batch // 8), gflop / 4
    flops = batch * gflop * 1e9
    t_mm = flops / peak
    kernels = int(loguniform(rng, *w.kernels))
    launch_s = float(np.clip(r["launch"] * t_mm * (1 + e) / kernels, 3e-6, 5e-5))
    if hot == "launch":
        kernels = int(np.clip(r["launch"] * t_mm * (1 + e) / launch_s, 100, 20000))
    params = loguniform(rng, *w.params_m) * 1e6
    return Model(
        matmul_flops=flops,
        matmul_ai=loguniform(rng, 300.0, 1500.0),
        elem_bytes=e * t_mm * board.hbm_gbs * GB * HBM_PRACTICAL,
        elem_ai=loguniform(rng, 0.5, 4.0),
        amp=amp,
        kernels=kernels,
        launch_s=launch_s,
        sm_fill=fill,
        occupancy=rng.uniform(0.15, 0.6),
        grad_bytes=params * (2.0 if amp else 4.0),
        overlap=rng.uniform(0.0, 0.4) if hot in ("intra", "inter", "p2p") else rng.uniform(0.5, 0.95),
        backward_share=rng.uniform(0.55, 0.7),
        fb_frac=rng.uniform(0.85, 0.99),
    ), batch


def step_seconds(model: Model, board: Board, cap: float) -> float:
    """The step's kernel time on a GPU at the capped clock, by the roofline (as :mod:`.stages` works it)."""
    fill = model.sm_fill * power_clock(cap)
    peak = board.tflops * 1e12 * (1.0 if model.amp else board.fp32_ratio) * fill * MATMUL_EFFICIENCY
    hbm = board.hbm_gbs * GB * HBM_PRACTICAL
    mm = max(model.matmul_flops / peak, model.matmul_flops / model.matmul_ai / hbm)
    el = max(model.elem_bytes * model.elem_ai / (board.tflops * 1e12 / 16 * power_clock(cap)), model.elem_bytes / hbm)
    return mm + el


def _gradients(
    rng: np.random.Generator,
    spec_parts: tuple[Board, int, int, Fabric, float],
    model: Model,
    t_gpu: float,
    r: dict[str, float],
    hot: str,
) -> tuple[Model, Fabric, float]:
    """Gradient bytes (for an intended link) or a fabric fast enough (for the rest)."""
    board, gpus, pods, fabric, gbps = spec_parts
    grad = model.grad_bytes
    intra_bw = board.nvlink_gbs / 2 * GB * 0.8 if board.nvlink_gbs else PCIE_GBS[board.pcie_gen] * GB * 0.6
    hidden = model.overlap * model.backward_share * t_gpu
    if hot in ("intra", "p2p") and gpus > 1:
        grad = (r["intra"] * t_gpu + hidden) * intra_bw / (2 * (gpus - 1) / gpus)
    if pods > 1:
        eff = RDMA_EFFICIENCY if fabric.rdma else TCP_EFFICIENCY
        if hot == "inter":
            grad = (r["inter"] * t_gpu + hidden) * gbps / 8 * GB * eff / (2 * (pods - 1) / pods)
        else:
            need = grad * 2 * (pods - 1) / pods / (r["inter"] * t_gpu + hidden) / (GB / 8 * eff)
            fast = [g for g in FABRIC_GBPS[fabric] if g >= need]
            gbps = fast[0] if fast else FABRIC_GBPS[fabric][-1]
            # gradient accumulation: all-reduce every few micro-steps, fewer bytes per step
            grad = min(grad, (r["inter"] * t_gpu + hidden) * gbps / 8 * GB * eff / (2 * (pods - 1) / pods))
    if gpus > 1 and hot not in ("intra", "p2p"):
        grad = min(grad, (r["intra"] * t_gpu + hidden) * intra_bw / (2 * (gpus - 1) / gpus))
    grad = float(np.clip(grad, 1e6, 2.8e10))
    return replace(model, grad_bytes=grad), fabric, gbps


def draw_spec(rng: np.random.Generator, mechanism: Mechanism) -> tuple[JobSpec, str]:
    """One Job leaning towards ``mechanism``, and the name of the stage it was meant to overload."""
    hot = hot_stage(mechanism, rng)
    r = _ratios(rng, hot)
    board = _board(rng, hot)
    gpus, pods, fabric, gbps = _topology(rng, board, hot)
    workload = pick(rng, _WORKLOAD_WEIGHTS["intra" if hot == "p2p" else hot])
    cap = 1.0 if rng.random() < 0.7 else rng.uniform(0.6, 0.95)
    model, batch = _model(rng, workload, board, hot, r, cap)
    t_gpu = step_seconds(model, board, cap)
    model, fabric, gbps = _gradients(rng, (board, gpus, pods, fabric, gbps), model, t_gpu, r, hot)
    loader, host = draw_host(rng, mechanism, hot, r, (workload, batch, gpus, t_gpu, board))
    # each pod runs at its slowest GPU's clock: boards of one type differ by a few per cent
    spread = tuple(float(np.min(rng.uniform(0.93, 1.0, size=gpus))) for _ in range(pods))
    spec = JobSpec(workload, board, gpus, pods, fabric, gbps, cap, spread, loader, model, host)
    return spec, hot
