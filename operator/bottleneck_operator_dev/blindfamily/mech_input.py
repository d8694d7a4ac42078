"""The input-side mechanisms: storage (IO) and the loader's CPU.

Each mechanism has a ``setup`` that puts its cause in place (returns False where the cluster
cannot have it) and a ``force`` that sets the cause's one free quantity so that the stage takes
the seconds asked, clipped into the range that quantity can plausibly have (``Draft.bounds``);
whether the job then really is bound by it is checked afterwards, never assumed.
"""

from __future__ import annotations

import math

import numpy as np

from bottleneck_operator_dev.blindfamily.draft import Draft
from bottleneck_operator_dev.blindfamily.hardware import STORAGE
from bottleneck_operator_dev.blindfamily.workloads import draw

GB = 1e9


def _storage(d: Draft, rng: np.random.Generator, kinds: tuple[str, ...]) -> bool:
    """Put the dataset on one of ``kinds`` the cluster has, with that kind's bandwidth range."""
    have = [k for k in kinds if k in (*d.cluster.local, *d.cluster.shared)]
    if not have:
        return False
    d.storage = str(rng.choice(have))
    spec = STORAGE[d.storage]
    d.bounds = (spec.low_bps, spec.high_bps)
    d.storage_bps = draw(d.bounds, rng, log=True)
    d.tags.append(f"storage-{d.storage}")
    return True


def local_disk(d: Draft, rng: np.random.Generator) -> bool:
    """One local SATA SSD or NVMe holding many small files: the device itself is the limit.

    A single instance-store or boot NVMe read file by file by a few workers each gets well below
    its sequential rate; SATA is limited by the interface (~0.55 GB/s, TELEMETRY.md).
    """
    if not _storage(d, rng, ("sata-ssd", "nvme")):
        return False
    if d.storage == "nvme":
        d.bounds = (0.6 * GB, d.bounds[1])
    return True


def block_volume(d: Draft, rng: np.random.Generator) -> bool:
    """A cloud block volume (EBS gp3, PD) at its provisioned throughput: requests queue at the device."""
    return _storage(d, rng, ("block-volume",))


def io_max(d: Draft, rng: np.random.Generator) -> bool:
    """A cgroup io.max read limit on a fast local disk: iowait and io pressure high, the disk nearly idle."""
    if not _storage(d, rng, ("nvme", "nvme-raid", "sata-ssd")):
        return False
    d.io_mode, d.bounds = "io.max", (40e6, 0.6 * STORAGE[d.storage].low_bps)
    d.tags.append("cgroup-io-max")
    return True


def nfs(d: Draft, rng: np.random.Generator) -> bool:
    """An NFS or EFS mount: reads arrive as network receive, readers wait in D state."""
    return _storage(d, rng, ("nfs", "efs"))


def object_store(d: Draft, rng: np.random.Generator) -> bool:
    """HTTP readers of an object store (S3, GCS; WebDataset, boto3): sockets, S state, no iowait."""
    if not _storage(d, rng, ("object",)):
        return False
    if d.cluster.name == "gke-l4" and rng.random() < 0.4:
        # Cloud Storage FUSE: the readers block in the FUSE request (D state) but not in block IO.
        d.io_mode = "fuse"
        d.tags.append("gcsfuse")
    return True


def mmap_dataset(d: Draft, rng: np.random.Generator) -> bool:
    """A memory-mapped dataset (Arrow, LMDB, numpy memmap, FFCV) read by page faults on a local disk.

    Random faults keep only a few requests in flight, so the disk delivers far below its sequential rate.
    """
    if not _storage(d, rng, ("nvme", "sata-ssd", "nvme-raid")):
        return False
    fast = d.storage != "sata-ssd"
    d.io_mode, d.bounds = "mmap", (60e6, 1.4 * GB if fast else 0.3 * GB)
    d.tags.append("mmap")
    return True


def lustre(d: Draft, rng: np.random.Generator) -> bool:
    """Lustre/GPFS over InfiniBand with many small files: metadata-bound, reads arrive over RDMA."""
    if not _storage(d, rng, ("lustre",)):
        return False
    d.bounds = (0.3 * GB, 4.0 * GB)
    return True


def force_read(d: Draft, x: float) -> bool:
    """The storage bandwidth at which reading one step takes ``x`` seconds."""
    d.storage_bps = float(np.clip(d.batch * d.k * d.read_bytes / x, *d.bounds))
    return True


def _cost_bounds(d: Draft, heavy: float) -> None:
    lo, hi = d.arch.cpu_s
    d.bounds = (lo * 0.5, hi * heavy)


def few_workers(d: Draft, rng: np.random.Generator) -> bool:
    """One to three DataLoader workers per rank on a node with many idle cores."""
    per_rank = int(rng.integers(1, 4))
    d.workers, d.cores, d.cpu_limit = d.k * per_rank, float(d.k * per_rank), None
    d.tags.append(f"num-workers-{per_rank}")
    _cost_bounds(d, 2.0)
    return True


def single_process(d: Draft, rng: np.random.Generator) -> bool:
    """``num_workers=0``: each rank decodes its own batch between steps, one core each, no overlap."""
    d.workers, d.cores, d.serial_input, d.cpu_limit = 0, float(d.k), True, None
    d.tags.append("num-workers-0")
    _cost_bounds(d, 2.0)
    return True


def cfs_limit(d: Draft, rng: np.random.Generator) -> bool:
    """A CPU limit below what the loader needs: the CFS quota runs out in most periods."""
    d.workers = d.k * int(rng.integers(6, 17))
    d.pods_per_node = 1
    d.bounds = (float(d.k + 1), float(d.cluster.node_cpus) * min(1.0, 2.0 * d.k / d.cluster.node_gpus))
    d.cpu_limit = d.bounds[1]
    d.cores = d.cpu_limit - d.k
    d.tags.append("cpu-limit")
    return True


def saturated(d: Draft, rng: np.random.Generator) -> bool:
    """Heavy augmentation with more workers than cores: every core of the node is busy."""
    d.pods_per_node, d.cpu_limit = 1, None
    free = d.cluster.node_cpus * float(rng.uniform(0.9, 0.98))
    d.cores = free
    d.workers = math.ceil(free * float(rng.uniform(1.1, 1.6)))
    d.tags.append("heavy-augmentation")
    _cost_bounds(d, 6.0)
    return True


def force_cpu_cost(d: Draft, x: float) -> bool:
    """The per-sample decode/augment cost at which the loader needs ``x`` seconds per step."""
    d.cpu_s = float(np.clip(x * d.cores / (d.batch * d.k), *d.bounds))
    return True


def force_cpu_limit(d: Draft, x: float) -> bool:
    """The CPU limit at which the loader needs ``x`` seconds per step (one core kept per rank).

    Limits are set in whole cores (halves below 8), as people write them.
    """
    need = d.k + d.batch * d.k * d.cpu_s / x
    limit = round(need * 2) / 2 if need < 8 else float(round(need))
    d.cpu_limit = float(np.clip(limit, *d.bounds))
    d.cores = d.cpu_limit - d.k
    return True
