"""Model families: what one training sample costs each stage.

Per-sample figures are for training (forward + backward, about three forward passes). ``bytes_mem``
is the HBM traffic of the element-wise, normalisation and attention kernels, whose arithmetic
intensity is too low for the tensor cores to matter; the matmul group's own traffic follows from
``intensity``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    """One model family.

    Attributes:
        key: short id (tags).
        flops: training FLOPs per sample.
        bytes_mem: HBM bytes per sample of the memory-bound kernel group.
        intensity: FLOP per HBM byte of the matmul/conv group.
        kernels: kernels launched per step (independent of the batch).
        params: parameters (the gradient exchanged every step).
        sample_bytes: bytes per sample on storage.
        h2d_bytes: bytes per sample copied host to device.
        decode: CPU core-seconds per sample (read, decode, augment, collate).
        batches: per-GPU batch sizes it is trained with.
        working_set: host memory per pod, bytes, besides the loader's buffers.
        mem_heavy: an HBM-bandwidth-hungry variant exists (embedding tables, unfused attention).
    """

    key: str
    flops: float
    bytes_mem: float
    intensity: float
    kernels: int
    params: float
    sample_bytes: float
    h2d_bytes: float
    decode: float
    batches: tuple[int, ...]
    working_set: float
    mem_heavy: bool = False


GiB = float(2**30)

WORKLOADS: tuple[Workload, ...] = (
    # ResNet-50: 4.1 GMAC forward at 224 px; ImageNet JPEGs ~110 KB; 50-200 images/s per core.
    Workload("resnet50", 24.6e9, 0.9e9, 180.0, 480, 25.6e6, 110e3, 150e3, 1 / 120, (64, 128, 256), 14 * GiB),
    # ViT-B/16: 17.6 GFLOPs forward; same input pipeline as ResNet.
    Workload("vit_b16", 53e9, 1.6e9, 250.0, 420, 86e6, 110e3, 150e3, 1 / 110, (64, 128), 16 * GiB, True),
    # BERT-large, 512 tokens: 6 * params * tokens.
    Workload("bert_large", 1.04e12, 9e9, 300.0, 900, 340e6, 2.2e3, 4.1e3, 1 / 4000, (8, 16, 32), 20 * GiB, True),
    # GPT 1.3B, 2048 tokens.
    Workload("gpt_1b3", 16e12, 60e9, 320.0, 1300, 1.3e9, 8.2e3, 16.4e3, 1 / 2500, (2, 4, 8), 40 * GiB, True),
    # 3D U-Net on CT volumes (MLPerf's KiTS19 task): large samples, heavy CPU augmentation.
    Workload("unet3d", 2.8e12, 40e9, 120.0, 700, 19e6, 28e6, 32e6, 0.35, (2, 4), 48 * GiB),
    # Recommender with large embedding tables: gathers dominate HBM traffic.
    Workload("dlrm", 2.5e8, 2.0e8, 60.0, 220, 540e6, 1.1e3, 1.6e3, 1 / 20000, (2048, 4096), 60 * GiB, True),
    # Speech: audio decode, resampling and filter banks on the CPU.
    Workload("speech", 0.35e12, 6e9, 200.0, 1100, 120e6, 180e3, 320e3, 1 / 45, (16, 32), 24 * GiB),
    # A small CNN on small images: tiny kernels, launch overhead counts.
    Workload("small_cnn", 1.1e9, 0.06e9, 60.0, 260, 11e6, 3.1e3, 12.3e3, 1 / 1500, (64, 128, 256), 6 * GiB),
)
