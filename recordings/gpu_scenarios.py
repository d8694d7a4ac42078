"""The GPU recordings: real PyTorch training loops on a real GPU, one known bottleneck each.

Each runs in the pod's cgroup beside a real node-exporter and Prometheus, like the other recordings,
and the GPU side is GPU 0 read through NVML (:mod:`recordings.nvml_gpu`) instead of the virtual GPU.
They need a machine with an NVIDIA GPU, PyTorch and ``nvidia-ml-py``; ``make record-gpu`` runs them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recordings.cgroups import Counters, Limits, block_device_of
from recordings.cpu_quota import write_jpegs
from recordings.harness import Context, Scenario
from recordings.interconnect_veth import LINK, fabric_down, fabric_up, start_peer
from recordings.interconnect_veth import RATE as FABRIC_RATE
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
FED_WORKERS = 6  # decode ~15 batches/s together, twice what the GPU takes
# 8192x8192 bf16 products a batch (~1.7 ms each on the H200): a model that keeps the GPU busy
# about half of a starved step (IO: 16 MiB at 40 MB/s is 0.42 s; one JPEG worker: 0.39 s)
# and the whole of a fed one (0.15 s a batch against the six workers' ~0.07 s).
HALF_STEP_WORK = 110
FED_WORK = 90
# 16 MiB objects a batch through the 200 Mbit/s link take 0.7 s: 190 products keep the GPU busy ~45 %
OBJECTS_HALF_WORK = 190
MEMORY_LIMIT = 1280 << 20  # the CUDA context's host memory plus about a third of the dataset
# 64 MiB of fp32 gradients each way through the 1 Gbit/s link take ~0.54 s; 150 products (~0.26 s)
# before each exchange keep the GPU busy about a third of a step that the link bounds
GRAD_BYTES = 64 << 20
ALLREDUCE_PORT = 29501  # the peer listens on it, rank 0 connects to it
ALLREDUCE_WORK = 150
PEER_COMPUTE_S = 0.2  # the peer's gradient is ready a little before this rank's, as a faster peer's is
# gpu-launch-wide's MLP (~67 steps/s) fed 8 JPEGs a step by six workers that decode ~120 batches/s together
LAUNCH_FED_WORKERS = 6
LAUNCH_FED_IMAGES = 8
CHECKPOINT_EVERY_S = 30.0
CHECKPOINT_MIB = 4096  # bf16 weights and Adam's moments of a ~0.7B-parameter model
CHECKPOINT_FILE = "state.ckpt"
PAUSES_FILE = str(Path(CHECKPOINT_FILE).with_suffix(".pauses"))  # where the workload times its saves


def scenarios(workroot: Path) -> dict[str, Scenario]:
    """The GPU scenarios by name; the IO one limits reads on the disk that holds ``workroot``."""
    workroot.mkdir(parents=True, exist_ok=True)
    dev, disk = block_device_of(workroot)
    found = [
        Scenario("compute", "GPU", "compute", "nothing: 8192x8192 bf16 matrix products back to back",
                 Limits(), launch=_launcher("matmul"), real_gpu=True),
        Scenario("compute-fp32", "GPU", "compute",
                 "nothing: 8192x8192 fp32 matrix products with TF32 off, back to back (the SMs' FP32 units bound "
                 "the step, the tensor pipes idle)",
                 Limits(), launch=_launcher("matmul", "--fp32"), real_gpu=True),
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
        Scenario("transformer", "GPU", "compute",
                 "eight 2048-wide transformer layers (16 heads, 8 sequences of 1,024 tokens a batch) trained with "
                 "fused AdamW under bf16 autocast",
                 Limits(), launch=_launcher("transformer", "--width", "2048", "--batch", "8"), real_gpu=True),
        Scenario("streamed", "Memory", "hbm-bandwidth",
                 "sixteen 8192-wide bf16 linear layers trained with SGD at a batch of 4: every product and the "
                 "update stream the 2 GiB of weights from HBM",
                 Limits(), launch=_launcher("streamed", "--layers", "16", "--width", "8192", "--batch", "4"),
                 real_gpu=True),
        Scenario("h2d", "Interconnect", "pcie", "nothing: a 1 GiB batch in pageable host memory copied each step",
                 Limits(), launch=_launcher("h2d"), real_gpu=True),
        Scenario("h2d-pinned", "Interconnect", "pcie", "nothing: a 1 GiB batch in pinned host memory copied each step",
                 Limits(), launch=_launcher("h2d", "--pinned"), real_gpu=True),
        Scenario("d2h-pinned", "Interconnect", "pcie",
                 "nothing: a 1 GiB tensor copied from the GPU to pinned host memory each step (state offloaded to "
                 "the host)", Limits(), launch=_launcher("h2d", "--pinned", "--back"), real_gpu=True),
        Scenario("loader", "CPU", "too-few-workers",
                 f"one DataLoader worker decoding and augmenting {LOADER_BATCH} JPEGs (512x512) per batch",
                 Limits(), launch=_loader(1),
                 real_gpu=True, setup=write_jpegs),
        Scenario("workers0", "CPU", "too-few-workers",
                 f"num_workers=0: the training process decodes and augments {LOADER_BATCH} JPEGs (512x512) per "
                 "batch itself, between its GPU steps",
                 Limits(), launch=_loader(0),
                 real_gpu=True, setup=write_jpegs),
        Scenario("loader-busy", "CPU", "too-few-workers",
                 f"one DataLoader worker decoding {LOADER_BATCH} JPEGs (512x512) a batch for a model that keeps the "
                 f"GPU busy about half of each step ({HALF_STEP_WORK} 8192x8192 bf16 products a batch)",
                 Limits(), launch=_loader(1, HALF_STEP_WORK), real_gpu=True, setup=write_jpegs),
        Scenario("compute-fed", "GPU", "compute",
                 f"{FED_WORKERS} DataLoader workers decoding {LOADER_BATCH} JPEGs (512x512) a batch, faster than the "
                 f"model takes them ({FED_WORK} 8192x8192 bf16 products a batch): the GPU bounds the step while the "
                 "workers keep cores busy",
                 Limits(), launch=_loader(FED_WORKERS, FED_WORK), real_gpu=True, setup=write_jpegs),
        Scenario("workers0-busy", "CPU", "too-few-workers",
                 f"num_workers=0 as gpu-workers0, with a model of {HALF_STEP_WORK} 8192x8192 bf16 products a batch: "
                 "decoding and the GPU's work take turns in the training process",
                 Limits(), launch=_loader(0, HALF_STEP_WORK), real_gpu=True, setup=write_jpegs),
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
        Scenario("objectstore-busy", "IO", "network-storage",
                 f"the fetches of gpu-objectstore made a batch ahead (through the same {RATE}/s link) for a model of "
                 f"{OBJECTS_HALF_WORK} 8192x8192 bf16 products a batch",
                 Limits(), launch=_objectstore_busy, real_gpu=True, setup=link_up, teardown=link_down),
        Scenario("io", "IO", "local-disk",
                 f"reads limited to {READ_BPS / 1e6:g} MB/s on {disk} ({dev}), page cache evicted after each read",
                 Limits(read_bps=(dev, READ_BPS)),
                 launch=_reader(), real_gpu=True, setup=write_samples),
        Scenario("io-busy", "IO", "local-disk",
                 f"the reads of gpu-io ({READ_BPS / 1e6:g} MB/s on {disk}) made ahead in a reader thread for a model "
                 f"that keeps the GPU busy about half of each step ({HALF_STEP_WORK} 8192x8192 bf16 products a batch)",
                 Limits(read_bps=(dev, READ_BPS)), launch=_reader("--prefetch", "--work", str(HALF_STEP_WORK)),
                 real_gpu=True, setup=write_samples),
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
        Scenario("allreduce", "Interconnect", "network",
                 f"{GRAD_BYTES >> 20} MiB of gradients swapped each step with a peer rank through a {FABRIC_RATE}/s "
                 f"veth (tc tbf) to its own network namespace, after {ALLREDUCE_WORK} 8192x8192 bf16 products",
                 Limits(), launch=_allreduce, real_gpu=True, setup=fabric_up, teardown=fabric_down),
        Scenario("launch-fed", "GPU", "launch-bound",
                 f"the eager-mode MLP of gpu-launch-wide (600 layers 512 wide, batch 256) fed {LAUNCH_FED_IMAGES} "
                 f"JPEGs (512x512) a step by {LAUNCH_FED_WORKERS} DataLoader workers that decode faster than it "
                 "takes them: the host's launches bound the step while the workers keep cores busy",
                 Limits(), launch=_loader(LAUNCH_FED_WORKERS, batch=LAUNCH_FED_IMAGES, launch=1200),
                 real_gpu=True, setup=write_jpegs),
        Scenario("checkpoint", "GPU", "compute",
                 f"the products of gpu-compute with {CHECKPOINT_MIB >> 10} GiB of state copied to the host and "
                 f"written to disk (fsync'd) every {CHECKPOINT_EVERY_S:g} s, the GPU idle while it saves",
                 Limits(), launch=_launcher("checkpoint", "--file", f"{{workdir}}/{CHECKPOINT_FILE}", "--every",
                                            str(CHECKPOINT_EVERY_S), "--mib", str(CHECKPOINT_MIB)),
                 real_gpu=True, setup=_no_pauses, extra_figures=_pauses),
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


def _objectstore_busy(ctx: Context) -> None:
    _launcher("objects", "--url", start_store(ctx), "--batch", "16", "--workers", "4", "--prefetch", "--work",
              str(OBJECTS_HALF_WORK))(ctx)  # fmt: skip


def _with_neighbours(ctx: Context) -> None:
    write_samples(ctx)
    start_neighbours(ctx)


def _reader(*extra: str) -> Callable[[Context], None]:
    """16 random 1 MiB samples a batch from the sample file (``--mapped``: through a memory mapping)."""
    return _launcher("read", "--file", "{workdir}/samples.bin", "--batch", "16", *extra)


def _loader(workers: int, work: int = 0, *, batch: int = LOADER_BATCH, launch: int = 0) -> Callable[[Context], None]:
    """The JPEG loader with ``workers`` DataLoader workers (0: the training process decodes) feeding a model
    of ``work`` large products a batch (0: a few small ones), or the eager-mode MLP of ``launch`` kernels."""
    mlp = ("--launch", str(launch), "--width", "512", "--model-batch", "256") if launch else ()
    return _launcher(
        "loader", "--images", "{workdir}/images", "--batch", str(batch), "--workers", str(workers),
        "--work", str(work), *mlp,
    )  # fmt: skip


def _allreduce(ctx: Context) -> None:
    start_peer(ctx, ALLREDUCE_PORT, GRAD_BYTES, PEER_COMPUTE_S)  # no GPU of its own
    _launcher("allreduce", "--host", LINK.peer_ip, "--port", str(ALLREDUCE_PORT), "--grad-bytes", str(GRAD_BYTES),
              "--work", str(ALLREDUCE_WORK))(ctx)  # fmt: skip


def _no_pauses(ctx: Context) -> None:
    (ctx.workdir / PAUSES_FILE).unlink(missing_ok=True)


def _pauses(ctx: Context, first: Counters, last: Counters, dt: float) -> dict[str, Any]:
    """Each checkpoint's [start, end] in wall-clock seconds (the truth's window says which fall inside it)."""
    lines = (ctx.workdir / PAUSES_FILE).read_text().splitlines()
    return {"checkpoint_pauses": [json.loads(line) for line in lines if line.strip()]}


def _launcher(kind: str, *args: str) -> Callable[[Context], None]:
    """Start ``python -m recordings.gpu_workloads KIND ARGS`` ("{workdir}" in ARGS: the scenario's folder)."""

    def launch(ctx: Context) -> None:
        argv = [kind, *(a.format(workdir=ctx.workdir) for a in args), "--progress", str(ctx.progress_file(0))]
        ctx.spawn(argv, "recordings.gpu_workloads")

    return launch
