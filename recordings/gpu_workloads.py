"""The GPU recordings' training loops, run as ``python -m recordings.gpu_workloads KIND ...`` in the pod's cgroup.

Each loop runs real PyTorch work on GPU 0 and publishes its step count after every step
(:func:`recordings.virtual_gpu.write_progress`) until it is terminated. One thing bounds each:

- ``matmul``: large bf16 matrix products (tensor cores, compute-bound); ``--fp32``: fp32 ones with TF32
  off (the SMs' FP32 units, compute-bound with the tensor pipes idle).
- ``elementwise``: adds over tensors far larger than L2 (HBM bandwidth-bound, tensor pipes idle).
- ``launch``: eager-mode steps of hundreds of tiny kernels (the host's launches bound the step).
- ``transformer``: a stack of transformer layers trained with AdamW under bf16 autocast (the GPU's
  compute bounds the step, with the layer norms, softmax and activations real models run between the
  products).
- ``streamed``: a deep, wide bf16 MLP trained at a batch of a few samples: each product is a
  matrix-vector one that streams its weights from HBM, and so does the update (HBM-bound, tensor
  pipes nearly idle).
- ``h2d``: a large batch in pageable host memory copied to the GPU every step (the copy bounds it);
  ``--back``: a large tensor copied from the GPU to the host every step instead.
- ``loader``: JPEG decoding and augmentation in DataLoader workers feeding a small model (one worker,
  or several under the pod's CPU quota); ``--work N`` adds N 8192x8192 bf16 products a batch, a model
  that keeps the GPU busy for part of each step (or all of it, with enough workers); ``--launch N``
  feeds the eager-mode MLP of ``launch`` instead (the workers keep up, the host's launches bound it).
- ``allreduce``: one data-parallel rank that computes on the GPU, copies its gradient to pinned host
  memory, swaps it with its peer rank over TCP (through a shaped link), averages and copies it back:
  gradient exchange over a plain network, as Gloo or NCCL's socket transport does it.
- ``checkpoint``: the products of ``matmul`` with the model's state copied to the host and written to
  disk (fsync'd, then renamed into place) every ``--every`` seconds; the GPU idles while it saves.
- ``objects``: 1 MiB samples fetched over HTTP from an object store behind a rate-limited link
  (``--prefetch``: the next batch fetched while the GPU works).
- ``read``: samples read at random offsets of a file under a read-bandwidth limit, page cache evicted;
  with ``--mapped`` the file is memory-mapped and read by touching its pages, as Arrow, LMDB and
  ``np.memmap`` datasets are (each page-cache miss a major fault, not a ``read()`` call); with
  ``--prefetch`` a reader thread fetches the next batches while the GPU works on this one, as a
  DataLoader's workers do.
- ``swapped``: samples gathered at random from an in-memory dataset larger than the pod's memory limit.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from recordings.virtual_gpu import write_progress
from recordings.workloads import _decode, connect, exchange, fetch_batch, in_memory_dataset, random_batch

KINDS = ("matmul", "elementwise", "launch", "transformer", "streamed", "h2d", "loader", "objects", "read", "swapped",
         "allreduce", "checkpoint")  # fmt: skip


def _loop(progress: Path, step: Callable[[], None], sync: Callable[[], None]) -> None:
    done = 0
    while True:
        step()
        sync()
        done += 1
        write_progress(progress, done)


def _model(torch: Any, work: int) -> Callable[[Any], None]:
    """A batch's forward pass: four 4096-wide products, plus ``work`` 8192x8192 bf16 products (each
    ~1.7 ms on an H200: gpu-compute runs 74 steps of eight a second) for a model of some size."""
    weight = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) if work else None
    out = torch.empty_like(big) if work else None

    def forward(x: Any) -> None:
        if x.numel() >= 4096 * 4096:  # raw samples: their first 16 MiB as one input
            y = x.view(-1)[: 4096 * 4096].view(4096, 4096).to(torch.bfloat16)
        else:  # decoded images: a number a sample, spread over the input
            y = x.to(torch.bfloat16).mean() * weight
        for _ in range(4):
            y = y @ weight
        for _ in range(work):
            torch.matmul(big, big, out=out)

    return forward


def _prefetched(produce: Callable[[], Any], depth: int = 2) -> Callable[[], Any]:
    """``produce`` run ahead in a thread, ``depth`` batches deep (reads release the GIL)."""
    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)

    def run() -> None:
        while True:
            ready.put(produce())

    threading.Thread(target=run, daemon=True).start()
    return ready.get


def _products(torch: Any, size: int, fp32: bool = False) -> Callable[[], None]:
    """A step of eight size x size matrix products (bf16; ``fp32``: fp32 with TF32 off)."""
    # fp32 with TF32 off runs on the SMs' FP32 units, the tensor pipes idle
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.float32 if fp32 else torch.bfloat16
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    c = torch.empty_like(a)

    def step() -> None:
        for _ in range(8):
            torch.matmul(a, b, out=c)

    return step


def matmul(torch: Any, progress: Path, size: int, fp32: bool = False) -> None:
    _loop(progress, _products(torch, size, fp32), torch.cuda.synchronize)


def elementwise(torch: Any, progress: Path, elements: int) -> None:
    x = torch.ones(elements, device="cuda")
    y = torch.ones(elements, device="cuda")
    z = torch.empty_like(x)

    def step() -> None:
        for _ in range(20):
            torch.add(x, y, alpha=0.5, out=z)
            torch.mul(z, 0.999, out=x)

    _loop(progress, step, torch.cuda.synchronize)


def _launch_model(torch: Any, kernels: int, width: int, batch: int) -> Callable[[Any], None]:
    """A deep, narrow MLP in eager mode: each layer is a matmul of a few thread blocks and an
    activation, so the GPU finishes each kernel about as fast as the host can launch the next."""
    weights = [torch.randn(width, width, device="cuda") / width**0.5 for _ in range(16)]
    h0 = torch.randn(batch, width, device="cuda")

    def forward(x: Any) -> None:
        h = h0 if x is None else h0 * x.to(torch.float32).mean()
        for i in range(kernels // 2):
            h = torch.tanh(h @ weights[i % 16])

    return forward


def launch(torch: Any, progress: Path, kernels: int, width: int, batch: int) -> None:
    forward = _launch_model(torch, kernels, width, batch)
    _loop(progress, lambda: forward(None), torch.cuda.synchronize)


def transformer(torch: Any, progress: Path, layers: int, width: int, seq: int, batch: int) -> None:
    layer = torch.nn.TransformerEncoderLayer(
        width, width // 128, 4 * width, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(batch, seq, width, device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    _loop(progress, step, torch.cuda.synchronize)


def streamed(torch: Any, progress: Path, layers: int, width: int, batch: int) -> None:
    model = torch.nn.Sequential(
        *(torch.nn.Linear(width, width, bias=False, device="cuda", dtype=torch.bfloat16) for _ in range(layers))
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-6, foreach=True)
    x = torch.randn(batch, width, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        model(x).float().square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    _loop(progress, step, torch.cuda.synchronize)


def h2d(torch: Any, progress: Path, mib: int, pinned: bool, back: bool = False) -> None:
    host = torch.ones(mib * 1024 * 1024 // 4)  # pageable: the driver stages it through a pinned buffer
    if pinned:  # page-locked: the copy engine reads it directly, at the link's rate
        host = host.pin_memory()
    weight = torch.randn(1024, 1024, device="cuda")
    if back:  # the state copied out to the host each step (offloading, checkpoint snapshots)
        on_gpu = torch.ones(host.numel(), device="cuda")

        def step() -> None:
            torch.matmul(on_gpu[: 1024 * 1024].view(1024, 1024), weight)
            host.copy_(on_gpu)

    else:

        def step() -> None:
            batch = host.to("cuda", non_blocking=False)
            torch.matmul(batch[: 1024 * 1024].view(1024, 1024), weight)

    _loop(progress, step, torch.cuda.synchronize)


class _Jpegs:
    def __init__(self, files: list[str]) -> None:
        self.files = files

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int) -> Any:
        import torch

        return torch.tensor(_decode(self.files[i % len(self.files)]))


def loader(
    torch: Any, progress: Path, images: Path, batch: int, workers: int, work: int = 0, launch_kernels: int = 0,
    width: int = 512, model_batch: int = 256,
) -> None:  # fmt: skip
    files = sorted(str(p) for p in images.glob("*.jpg"))
    data = torch.utils.data.DataLoader(_Jpegs(files), batch_size=batch, num_workers=workers, shuffle=False)
    batches = iter(data)  # the workers fork before this process touches CUDA
    forward = _launch_model(torch, launch_kernels, width, model_batch) if launch_kernels else _model(torch, work)
    for done, x in enumerate(batches, start=1):
        forward(x.to("cuda"))
        torch.cuda.synchronize()
        write_progress(progress, done)


def objects(torch: Any, progress: Path, url: str, batch: int, workers: int, *, work: int, prefetch: bool) -> None:
    from multiprocessing import Pool

    rng = np.random.default_rng(4)
    pool = Pool(workers)  # the workers fork before this process touches CUDA
    forward = _model(torch, work)
    x = torch.empty(batch, 1 << 20, dtype=torch.uint8)

    def fetch() -> None:
        fetch_batch(pool, url, rng, batch, 1000)

    next_batch = _prefetched(fetch) if prefetch else fetch
    done = 0
    while True:
        next_batch()
        forward(x.to("cuda"))
        torch.cuda.synchronize()
        done += 1
        write_progress(progress, done)


def read(
    torch: Any, progress: Path, path: Path, batch: int, sample_bytes: int, *, mapped: bool, work: int, prefetch: bool
) -> None:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    view = mmap.mmap(fd, 0, prot=mmap.PROT_READ) if mapped else None
    rng = np.random.default_rng(2)
    forward = _model(torch, work)

    def sample(off: int) -> bytes:
        if view is None:
            data = os.pread(fd, sample_bytes, off)
        else:
            data = view[off : off + sample_bytes]  # the copy faults the pages in
            # mapped pages stay in the page cache whatever fadvise says: unmap them first
            view.madvise(mmap.MADV_DONTNEED, off, sample_bytes)
        os.posix_fadvise(fd, off, sample_bytes, os.POSIX_FADV_DONTNEED)
        return data

    def fetch() -> Any:
        buf = np.empty(batch * sample_bytes, dtype=np.uint8)
        for j, off in enumerate(rng.integers(0, (size - sample_bytes) // 4096, batch) * 4096):
            data = sample(int(off))
            buf[j * sample_bytes : j * sample_bytes + len(data)] = np.frombuffer(data, dtype=np.uint8)
        return buf

    next_batch = _prefetched(fetch) if prefetch else fetch

    def step() -> None:
        forward(torch.from_numpy(next_batch()).to("cuda"))

    _loop(progress, step, torch.cuda.synchronize)


def swapped(torch: Any, progress: Path, dataset_bytes: int, batch: int, sample_bytes: int) -> None:
    # The CUDA context's host memory is made resident first, as a training process's is before its
    # dataset loads; what the limit leaves of the dataset then lives in swap.
    forward = _model(torch, 0)
    data = in_memory_dataset(dataset_bytes, sample_bytes)
    rng = np.random.default_rng(3)

    def step() -> None:
        forward(torch.from_numpy(random_batch(data, rng, batch)).to("cuda"))

    _loop(progress, step, torch.cuda.synchronize)


def allreduce(torch: Any, progress: Path, host: str, port: int, grad_bytes: int, work: int) -> None:
    # The peer (recordings.workloads allreduce --rank 1) listens in its own namespace behind the link.
    sock = connect(host, port)
    forward = _model(torch, work)
    x = torch.ones(1, device="cuda")
    grad = torch.randn(grad_bytes // 4, device="cuda")
    staged = torch.empty(grad_bytes // 4, pin_memory=True)
    mine, theirs = staged.numpy(), np.empty(grad_bytes // 4, dtype=np.float32)
    done = wire = 0
    waited = 0.0
    while True:
        forward(x)
        grad.mul_(0.999)  # the backward pass's gradient, ready once the step's kernels are
        staged.copy_(grad)  # device to host: waits for the kernels
        t0 = time.perf_counter()
        exchange(sock, mine, theirs)
        waited += time.perf_counter() - t0
        grad.copy_(staged)
        torch.cuda.synchronize()
        done += 1
        wire += 2 * grad_bytes  # sent + received
        write_progress(progress, done, wire, waited)


def checkpoint(torch: Any, progress: Path, size: int, path: Path, every: float, state_mib: int) -> None:
    step = _products(torch, size)
    state = torch.randint(0, 255, (state_mib << 20,), device="cuda", dtype=torch.uint8)  # weights + optimiser
    pauses = path.with_suffix(".pauses")  # one [start, end] line a save, in wall-clock seconds
    last = time.monotonic()
    done = 0
    while True:
        step()
        torch.cuda.synchronize()
        done += 1
        write_progress(progress, done)
        if time.monotonic() - last < every:
            continue
        began = time.time()
        host = state.cpu().numpy()  # the training loop stops for the save, as torch.save in the loop does
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            f.write(memoryview(host))
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
        with pauses.open("a") as f:
            f.write(json.dumps([round(began, 3), round(time.time(), 3)]) + "\n")
        last = time.monotonic()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m recordings.gpu_workloads")
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("--progress", type=Path, required=True)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--elements", type=int, default=1 << 28)
    ap.add_argument("--kernels", type=int, default=2000)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--pinned", action="store_true")
    ap.add_argument("--back", action="store_true", help="copy device to host instead (h2d)")
    ap.add_argument("--fp32", action="store_true", help="fp32 products with TF32 off (matmul)")
    ap.add_argument("--mapped", action="store_true")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--images", type=Path)
    ap.add_argument("--file", type=Path)
    ap.add_argument("--url")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--dataset-bytes", type=int, default=3 << 30)
    ap.add_argument("--work", type=int, default=0, help="8192x8192 bf16 products a batch (loader, objects, read)")
    ap.add_argument("--prefetch", action="store_true", help="fetch the next batches in a thread (objects, read)")
    ap.add_argument("--launch", type=int, default=0, help="feed the eager-mode MLP of this many kernels (loader)")
    ap.add_argument("--model-batch", type=int, default=256, help="the eager-mode MLP's batch (loader --launch)")
    ap.add_argument("--host", help="the peer rank's address (allreduce)")
    ap.add_argument("--port", type=int, default=29501)
    ap.add_argument("--grad-bytes", type=int, default=64 << 20)
    ap.add_argument("--every", type=float, default=30.0, help="seconds between checkpoints (checkpoint)")
    ns = ap.parse_args(argv)
    import torch

    p = ns.progress
    runs: dict[str, Callable[[], None]] = {
        "matmul": lambda: matmul(torch, p, ns.size, ns.fp32),
        "elementwise": lambda: elementwise(torch, p, ns.elements),
        "launch": lambda: launch(torch, p, ns.kernels, ns.width, ns.batch),
        "transformer": lambda: transformer(torch, p, ns.layers, ns.width, ns.seq, ns.batch),
        "streamed": lambda: streamed(torch, p, ns.layers, ns.width, ns.batch),
        "h2d": lambda: h2d(torch, p, ns.mib, ns.pinned, ns.back),
        "loader": lambda: loader(
            torch, p, ns.images, ns.batch, ns.workers, ns.work, ns.launch, ns.width, ns.model_batch
        ),
        "objects": lambda: objects(torch, p, ns.url, ns.batch, ns.workers, work=ns.work, prefetch=ns.prefetch),
        "read": lambda: read(
            torch, p, ns.file, ns.batch, 1 << 20, mapped=ns.mapped, work=ns.work, prefetch=ns.prefetch
        ),
        "swapped": lambda: swapped(torch, p, ns.dataset_bytes, ns.batch, 1 << 20),
        "allreduce": lambda: allreduce(torch, p, ns.host, ns.port, ns.grad_bytes, ns.work),
        "checkpoint": lambda: checkpoint(torch, p, ns.size, ns.file, ns.every, ns.mib),
    }
    runs[ns.kind]()


if __name__ == "__main__":
    main()
