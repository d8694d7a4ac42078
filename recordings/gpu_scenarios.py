"""The GPU recordings: real PyTorch training loops on a real GPU, one known bottleneck each.

Each runs in the pod's cgroup beside a real node-exporter and Prometheus, like the other recordings,
and the GPU side is GPU 0 read through NVML (:mod:`recordings.nvml_gpu`) instead of the virtual GPU.
They need a machine with an NVIDIA GPU, PyTorch and ``nvidia-ml-py``; ``make record-gpu`` runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from recordings.cgroups import Limits, block_device_of
from recordings.cpu_quota import write_jpegs
from recordings.harness import Context, Scenario
from recordings.io_limit import write_samples
from recordings.memory_swap import remove_swapfile, swapfile
from recordings.neighbours import start_neighbours, stop_neighbours
from recordings.object_store import OBJECT_BYTES, RATE, link_down, link_up, start_store

READ_BPS = 40_000_000
LOADER_BATCH = 64
DATASET = 3 << 30
THROTTLED_CORES = 1.0
THROTTLED_WORKERS = 4
SATURATING_WORKERS = 16  # one per core of the recording machine, as the usual advice has it
MEMORY_LIMIT = 1280 << 20  # the CUDA context's host memory plus about a third of the dataset


def scenarios(workroot: Path) -> dict[str, Scenario]:
    """The GPU scenarios by name; the IO one limits reads on the disk that holds ``workroot``."""
    workroot.mkdir(parents=True, exist_ok=True)
    dev, disk = block_device_of(workroot)
    found = [
        Scenario("compute", "GPU", "compute", "nothing: 8192x8192 bf16 matrix products back to back",
                 Limits(), launch=_launcher("matmul"), real_gpu=True),
        Scenario("compute-neighbour", "GPU", "compute",
                 "the matrix products of gpu-compute beside a neighbour outside the pod that keeps every core of the "
                 "node busy", Limits(), launch=_launcher("matmul"), real_gpu=True,
                 setup=start_neighbours, teardown=stop_neighbours),
        Scenario("hbm", "Memory", "hbm-bandwidth", "nothing: fp32 adds and scales over 1 GiB tensors (HBM-bound)",
                 Limits(), launch=_launcher("elementwise"), real_gpu=True),
        Scenario("launch", "GPU", "launch-bound",
                 "nothing: a 1,000-layer 256-wide MLP at batch 32 in eager mode (host launches bound the step)",
                 Limits(), launch=_launcher("launch", "--batch", "32"), real_gpu=True),
        Scenario("launch-wide", "GPU", "launch-bound",
                 "nothing: a 600-layer 512-wide MLP at batch 256 in eager mode (larger kernels, still launch-bound)",
                 Limits(), launch=_launcher("launch", "--kernels", "1200", "--width", "512", "--batch", "256"),
                 real_gpu=True),
        Scenario("h2d", "Interconnect", "pcie", "nothing: a 1 GiB batch in pageable host memory copied each step",
                 Limits(), launch=_launcher("h2d"), real_gpu=True),
        Scenario("h2d-pinned", "Interconnect", "pcie", "nothing: a 1 GiB batch in pinned host memory copied each step",
                 Limits(), launch=_launcher("h2d", "--pinned"), real_gpu=True),
        Scenario("loader", "CPU", "too-few-workers",
                 f"one DataLoader worker decoding and augmenting {LOADER_BATCH} JPEGs (512x512) per batch",
                 Limits(), launch=_loader(1),
                 real_gpu=True, setup=write_jpegs),
        Scenario("workers0", "CPU", "too-few-workers",
                 f"num_workers=0: the training process decodes and augments {LOADER_BATCH} JPEGs (512x512) per "
                 "batch itself, between its GPU steps",
                 Limits(), launch=_loader(0),
                 real_gpu=True, setup=write_jpegs),
        Scenario("throttled", "CPU", "throttled",
                 f"{THROTTLED_WORKERS} DataLoader workers decoding {LOADER_BATCH} JPEGs (512x512) per batch "
                 f"under a CPU quota of {THROTTLED_CORES:g} core",
                 Limits(cpu_cores=THROTTLED_CORES), launch=_loader(THROTTLED_WORKERS),
                 real_gpu=True, setup=write_jpegs),
        Scenario("saturated", "CPU", "saturated",
                 f"{SATURATING_WORKERS} DataLoader workers decoding {LOADER_BATCH} JPEGs (512x512) per batch, "
                 "no CPU quota: every core of the node decodes",
                 Limits(), launch=_loader(SATURATING_WORKERS),
                 real_gpu=True, setup=write_jpegs),
        Scenario("objectstore", "IO", "network-storage",
                 f"4 workers fetching 16 x {OBJECT_BYTES >> 20} MiB objects a batch over HTTP, through a "
                 f"{RATE}/s link (tc tbf) to a store in its own network namespace",
                 Limits(), launch=_objectstore, real_gpu=True, setup=link_up, teardown=link_down),
        Scenario("io", "IO", "local-disk",
                 f"reads limited to {READ_BPS / 1e6:g} MB/s on {disk} ({dev}), page cache evicted after each read",
                 Limits(read_bps=(dev, READ_BPS)),
                 launch=_reader(), real_gpu=True, setup=write_samples),
        Scenario("io-neighbour", "IO", "local-disk",
                 f"the reads of gpu-io ({READ_BPS / 1e6:g} MB/s on {disk}) beside a neighbour outside the pod that "
                 "keeps every core of the node busy",
                 Limits(read_bps=(dev, READ_BPS)), launch=_reader(),
                 real_gpu=True, setup=_with_neighbours, teardown=stop_neighbours),
        Scenario("mmap", "IO", "local-disk",
                 f"a memory-mapped sample file read by touching its pages (as Arrow, LMDB and np.memmap datasets "
                 f"are), reads limited to {READ_BPS / 1e6:g} MB/s on {disk} ({dev}), pages dropped after each read",
                 Limits(read_bps=(dev, READ_BPS)),
                 launch=_reader("--mapped"),
                 real_gpu=True, setup=write_samples),
        Scenario("memory", "Memory", "host-memory-pressure",
                 f"{MEMORY_LIMIT >> 20} MiB memory limit with swap, for a {DATASET >> 30} GiB in-memory dataset "
                 "sampled at random (32 x 1 MiB a batch)",
                 Limits(memory_bytes=MEMORY_LIMIT, swap_bytes=6 << 30),
                 launch=_launcher("swapped", "--dataset-bytes", str(DATASET), "--batch", "32"),
                 real_gpu=True, setup=swapfile(6 << 30), teardown=remove_swapfile),
    ]  # fmt: skip
    return {f"gpu-{sc.name}": sc for sc in found}


def _objectstore(ctx: Context) -> None:
    _launcher("objects", "--url", start_store(ctx), "--batch", "16", "--workers", "4")(ctx)


def _with_neighbours(ctx: Context) -> None:
    write_samples(ctx)
    start_neighbours(ctx)


def _reader(*extra: str) -> Callable[[Context], None]:
    """16 random 1 MiB samples a batch from the sample file (``--mapped``: through a memory mapping)."""
    return _launcher("read", "--file", "{workdir}/samples.bin", "--batch", "16", *extra)


def _loader(workers: int) -> Callable[[Context], None]:
    """The JPEG loader with ``workers`` DataLoader workers (0: the training process decodes)."""
    return _launcher("loader", "--images", "{workdir}/images", "--batch", str(LOADER_BATCH), "--workers", str(workers))


def _launcher(kind: str, *args: str) -> Callable[[Context], None]:
    """Start ``python -m recordings.gpu_workloads KIND ARGS`` ("{workdir}" in ARGS: the scenario's folder)."""

    def launch(ctx: Context) -> None:
        argv = [kind, *(a.format(workdir=ctx.workdir) for a in args), "--progress", str(ctx.progress_file(0))]
        ctx.spawn(argv, "recordings.gpu_workloads")

    return launch
