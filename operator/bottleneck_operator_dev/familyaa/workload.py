"""The workload side of the causal graph: model family and size, batch, precision, data, loader.

Per-sample figures are published ones where they exist (ResNet-50's FLOPs and throughput, ImageNet's
mean JPEG size, the decode rate per core of TELEMETRY.md, MLPerf Training's models); the rest are
assumed ranges, each said so in docs/familyaa.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Family:
    """A model family: what one training sample costs, as ranges (low, high).

    Attributes:
        name: the family.
        params_m: parameters, millions.
        gflop: training GFLOP per sample (3x forward, or 6 x params x tokens).
        read_kb: bytes read from the dataset per sample, KB.
        cpu_ms: one core's decode + augment time per sample, ms.
        device_kb: bytes copied host to device per sample, KB.
        hbm_mb: HBM traffic of bandwidth-bound kernels per sample, MB.
        kernels: kernels launched per step (forward, backward, optimizer).
        fill: share of SMs the kernels keep busy.
        batch: per-GPU batch range.
        compute_eff: share of tensor peak a compute-bound kernel reaches.
    """

    name: str
    params_m: tuple[float, float]
    gflop: tuple[float, float]
    read_kb: tuple[float, float]
    cpu_ms: tuple[float, float]
    device_kb: tuple[float, float]
    hbm_mb: tuple[float, float]
    kernels: tuple[float, float]
    fill: tuple[float, float]
    batch: tuple[int, int]
    compute_eff: tuple[float, float]


FAMILIES: tuple[Family, ...] = (
    # ResNet-50: 4.1 GFLOP forward (x3 to train), ImageNet JPEGs ~110 KB, 50-200 img/s per core.
    Family(
        "resnet50",
        (25.6, 25.6),
        (12.3, 12.3),
        (90, 130),
        (5, 20),
        (150, 600),
        (150, 350),
        (500, 900),
        (0.8, 0.95),
        (64, 256),
        (0.3, 0.45),
    ),
    Family(
        "vit",
        (86, 300),
        (50, 180),
        (90, 130),
        (8, 25),
        (150, 600),
        (300, 900),
        (600, 1500),
        (0.85, 0.95),
        (32, 128),
        (0.4, 0.6),
    ),
    # GPT-style decoder, 2,048 tokens a sample, 6 x params x tokens.
    Family(
        "gpt",
        (350, 7000),
        (4300, 86000),
        (4, 16),
        (0.2, 1.0),
        (8, 16),
        (2000, 8000),
        (1500, 6000),
        (0.9, 0.98),
        (1, 16),
        (0.4, 0.6),
    ),
    Family(
        "bert",
        (110, 340),
        (340, 1050),
        (2, 6),
        (0.5, 2.0),
        (4, 8),
        (400, 900),
        (800, 2000),
        (0.85, 0.95),
        (16, 64),
        (0.4, 0.55),
    ),
    # DLRM-style recommender: embedding gathers, bandwidth-bound by design (MLPerf's DLRM).
    Family(
        "dlrm",
        (20, 100),
        (0.1, 0.6),
        (0.15, 0.3),
        (0.005, 0.03),
        (0.2, 0.4),
        (8, 40),
        (200, 600),
        (0.6, 0.9),
        (2048, 32768),
        (0.2, 0.35),
    ),
    Family(
        "speech",
        (100, 600),
        (600, 2500),
        (120, 400),
        (25, 80),
        (300, 900),
        (800, 2500),
        (1000, 3000),
        (0.8, 0.95),
        (8, 32),
        (0.35, 0.5),
    ),
    Family(
        "video",
        (30, 90),
        (150, 400),
        (1000, 4000),
        (120, 400),
        (2000, 6000),
        (1500, 4000),
        (800, 2000),
        (0.85, 0.95),
        (4, 16),
        (0.35, 0.5),
    ),
    # MLPerf's 3D U-Net: large preprocessed volumes read per sample.
    Family(
        "unet3d",
        (19, 19),
        (900, 1500),
        (20000, 60000),
        (40, 120),
        (8000, 16000),
        (3000, 6000),
        (800, 1500),
        (0.85, 0.95),
        (2, 8),
        (0.3, 0.45),
    ),
    # Small MLPs, GNN message passing, RL policies: many tiny kernels (launch-bound on a fast GPU).
    Family(
        "small",
        (0.5, 10),
        (0.005, 0.1),
        (0.5, 4),
        (0.01, 0.1),
        (0.5, 4),
        (0.2, 2),
        (800, 4000),
        (0.08, 0.3),
        (32, 512),
        (0.1, 0.25),
    ),
)


@dataclass(frozen=True)
class Workload:
    """One drawn workload: per-step demands for one GPU's share of the step.

    Attributes:
        family: the model family's name.
        params: parameters.
        batch: per-GPU samples per step.
        precision: "bf16", "fp16", "tf32" or "fp32".
        gflop: training GFLOP per sample.
        read_bytes: dataset bytes per sample.
        cpu_s: one core's decode+augment seconds per sample.
        device_bytes: host-to-device bytes per sample.
        hbm_bytes: bandwidth-bound HBM bytes per sample (plus the optimizer's per step, see causal).
        kernels: kernel launches per step.
        launch_us: host seconds per launch, microseconds (framework + driver; assumed 8-30).
        fill: share of SMs busy while kernels run.
        compute_eff: share of peak reached by compute-bound kernels.
        workers: data-loader worker processes per GPU.
        mmap: the dataset is memory-mapped (reads arrive as major faults).
        overlap: share of backward compute the gradient exchange can hide behind (DDP buckets).
        ws_gb: host working set per pod wanted by the job, GB.
    """

    family: str
    params: float
    batch: int
    precision: str
    gflop: float
    read_bytes: float
    cpu_s: float
    device_bytes: float
    hbm_bytes: float
    kernels: float
    launch_us: float
    fill: float
    compute_eff: float
    workers: int
    mmap: bool
    overlap: float
    ws_gb: float


def _pick(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    lo, hi = lo_hi
    if lo == hi:
        return float(lo)
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def draw_workload(rng: np.random.Generator, family: str | None = None) -> Workload:
    """Draw a workload, of the named family or of any."""
    fam = next((f for f in FAMILIES if f.name == family), None) or FAMILIES[int(rng.integers(len(FAMILIES)))]
    frac = rng.random()
    params_m = _pick(rng, fam.params_m)
    # FLOPs scale with size inside a family (6 x params x tokens for the language models).
    span = (np.log(params_m) - np.log(fam.params_m[0])) / max(np.log(fam.params_m[1] / fam.params_m[0]), 1e-9)
    gflop = float(np.exp(np.log(fam.gflop[0]) + span * np.log(fam.gflop[1] / fam.gflop[0])))
    precision = str(rng.choice(["bf16", "fp16", "tf32", "fp32"], p=[0.45, 0.25, 0.2, 0.1]))
    return Workload(
        family=fam.name,
        params=params_m * 1e6,
        batch=int(np.exp(rng.uniform(np.log(fam.batch[0]), np.log(fam.batch[1] + 1)))),
        precision=precision,
        gflop=gflop * float(rng.uniform(0.9, 1.1)),
        read_bytes=_pick(rng, fam.read_kb) * 1e3,
        cpu_s=_pick(rng, fam.cpu_ms) * 1e-3,
        device_bytes=_pick(rng, fam.device_kb) * 1e3,
        hbm_bytes=_pick(rng, fam.hbm_mb) * 1e6 * (0.6 + 0.8 * frac),
        kernels=_pick(rng, fam.kernels),
        launch_us=_pick(rng, (8.0, 30.0)),
        fill=float(rng.uniform(*fam.fill)),
        compute_eff=float(rng.uniform(*fam.compute_eff)),
        workers=int(rng.choice([0, 1, 2, 4, 6, 8, 12, 16], p=[0.05, 0.05, 0.1, 0.25, 0.15, 0.2, 0.1, 0.1])),
        mmap=bool(rng.random() < 0.2),
        overlap=float(rng.uniform(0.3, 0.9)),
        ws_gb=_pick(rng, (8.0, 120.0)),
    )
