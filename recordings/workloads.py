"""The recorded pipelines, run as ``python -m recordings.workloads KIND ...`` inside the pod's cgroup.

Each loop delivers batches to the virtual GPU and publishes its count after every batch
(:func:`recordings.virtual_gpu.write_progress`); it runs until it is terminated.

- ``jpeg``: a data loader with worker processes that decode and augment JPEGs with Pillow.
- ``read``: a loader that reads samples at random offsets of a file, evicting them from the page
  cache (``posix_fadvise(DONTNEED)``) so that every read reaches the disk.
- ``memory``: a loader that gathers random samples of an in-memory dataset larger than the pod's
  memory limit (the rest lives in swap).
- ``allreduce``: one data-parallel rank that, after each step's compute, exchanges its gradient
  tensor with its peer over TCP and averages the two, as a two-rank ring all-reduce does.
- ``objects``: a loader whose worker processes fetch samples from an HTTP object store, as
  WebDataset or an S3 client streams them; ``objectstore`` is the store.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import threading
import time
from multiprocessing import Pool
from multiprocessing.pool import Pool as WorkerPool
from pathlib import Path

import numpy as np

from recordings.virtual_gpu import write_progress


def _decode(path: str) -> float:
    from PIL import Image, ImageFilter

    with Image.open(path) as img:
        im = img.convert("RGB").resize((224, 224), Image.Resampling.BILINEAR)
        im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT).filter(ImageFilter.GaussianBlur(1))
        return float(np.asarray(im, dtype=np.float32).mean())


def jpeg(images: Path, progress: Path, batch: int, workers: int) -> None:
    files = sorted(str(p) for p in images.glob("*.jpg"))
    rng = np.random.default_rng(0)
    done = 0
    with Pool(workers) as pool:
        while True:
            picks = [files[i] for i in rng.integers(0, len(files), batch)]
            pool.map(_decode, picks, chunksize=max(1, batch // (workers * 2)))
            done += 1
            write_progress(progress, done)


def make_jpegs(images: Path, count: int, size: int) -> None:
    """Photographic-ish JPEGs (smooth gradients plus noise), so decoding costs what real photos do."""
    from PIL import Image

    images.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    for i in range(count):
        base = np.stack([xx * rng.uniform(100, 255), yy * rng.uniform(100, 255), (xx + yy) * 120], axis=-1)
        pixels = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
        (images / f"img{i:04d}.jpg").write_bytes(buf.getvalue())


def read(path: Path, progress: Path, batch: int, sample_bytes: int) -> None:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    rng = np.random.default_rng(2)
    done = 0
    while True:
        for off in rng.integers(0, (size - sample_bytes) // 4096, batch) * 4096:
            data = os.pread(fd, sample_bytes, int(off))
            os.posix_fadvise(fd, int(off), sample_bytes, os.POSIX_FADV_DONTNEED)
            np.frombuffer(data, dtype=np.uint8)[::4096].sum()
        done += 1
        write_progress(progress, done)


def in_memory_dataset(dataset_bytes: int, sample_bytes: int) -> np.ndarray:
    """A dataset held in RAM, one row a sample, written once as a loader caches it at start-up."""
    data = np.empty((dataset_bytes // sample_bytes, sample_bytes), dtype=np.uint8)
    for i in range(len(data)):
        data[i] = i % 251
    return data


def random_batch(data: np.ndarray, rng: np.random.Generator, batch: int) -> np.ndarray:
    """``batch`` samples drawn at random, gathered in index order as a sampler's batch is read."""
    return data[np.sort(rng.integers(0, len(data), batch))]


def memory(progress: Path, dataset_bytes: int, batch: int, sample_bytes: int) -> None:
    data = in_memory_dataset(dataset_bytes, sample_bytes)
    rng = np.random.default_rng(3)
    done = 0
    write_progress(progress, done)
    while True:
        _ = random_batch(data, rng, batch).astype(np.float32).mean()
        done += 1
        write_progress(progress, done)


def connect(host: str, port: int) -> socket.socket:
    """Connect to the peer rank listening at ``host:port``, waiting for it to come up (about 20 s)."""
    for _ in range(100):
        try:
            sock = socket.create_connection((host, port), timeout=60)
            break
        except OSError:
            time.sleep(0.2)
    else:
        raise ConnectionError(f"no peer at {host}:{port}")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def exchange(sock: socket.socket, grad: np.ndarray, peer: np.ndarray) -> None:
    """Swap ``grad`` with the peer rank's and average in place.

    Sends from and receives into the arrays' own memory (no intermediate copies), so that the link,
    not the copying, sets how long an exchange takes.
    """
    sender = threading.Thread(target=sock.sendall, args=(grad.data.cast("B"),))
    sender.start()
    view = peer.data.cast("B")
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:], len(view) - got)
        if n == 0:
            raise ConnectionError("peer closed")
        got += n
    sender.join()
    grad += peer
    grad *= 0.5


def allreduce(rank: int, host: str, port: int, progress: Path | None, grad_bytes: int, compute_s: float) -> None:
    if rank == 0:
        sock = connect(host, port)
    else:
        srv = socket.create_server((host, port))
        sock, _ = srv.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    grad = np.random.default_rng(rank).standard_normal(grad_bytes // 4).astype(np.float32)
    peer = np.empty_like(grad)
    done = wire = 0
    collective = 0.0
    while True:
        time.sleep(compute_s)  # the host waits on the step's kernels (the virtual GPU's compute)
        t0 = time.perf_counter()
        exchange(sock, grad, peer)
        collective += time.perf_counter() - t0  # the GPU's collective kernels wait this long
        done += 1
        wire += 2 * grad.nbytes  # sent + received
        if progress is not None:
            write_progress(progress, done, wire, collective)


def _fetch(url: str) -> float:
    import urllib.request

    with urllib.request.urlopen(url, timeout=60) as resp:
        data = resp.read()
    return float(np.frombuffer(data, dtype=np.uint8)[::4096].sum())


def fetch_batch(pool: WorkerPool, url: str, rng: np.random.Generator, batch: int, count: int) -> None:
    """Fetch ``batch`` objects picked at random of the store's first ``count``, one per worker task."""
    pool.map(_fetch, [f"{url}/shard/{i}" for i in rng.integers(0, count, batch)], chunksize=1)


def objects(url: str, progress: Path, batch: int, workers: int, count: int) -> None:
    rng = np.random.default_rng(4)
    done = 0
    with Pool(workers) as pool:
        while True:
            fetch_batch(pool, url, rng, batch, count)
            done += 1
            write_progress(progress, done)


def objectstore(host: str, port: int, object_bytes: int) -> None:
    """Serves ``GET /shard/<n>``: ``object_bytes`` of incompressible bytes (the same for every n)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = np.random.default_rng(5).integers(0, 256, object_bytes, dtype=np.uint8).tobytes()

    class Store(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    ThreadingHTTPServer((host, port), Store).serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m recordings.workloads")
    sub = ap.add_subparsers(dest="kind", required=True)
    j = sub.add_parser("jpeg")
    j.add_argument("--images", type=Path, required=True)
    j.add_argument("--batch", type=int, default=16)
    j.add_argument("--workers", type=int, default=2)
    r = sub.add_parser("read")
    r.add_argument("--file", type=Path, required=True)
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--sample-bytes", type=int, default=128 * 1024)
    m = sub.add_parser("memory")
    m.add_argument("--dataset-bytes", type=int, required=True)
    m.add_argument("--batch", type=int, default=32)
    m.add_argument("--sample-bytes", type=int, default=1 << 20)
    a = sub.add_parser("allreduce")
    a.add_argument("--rank", type=int, required=True)
    a.add_argument("--host", required=True)
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--grad-bytes", type=int, default=8 << 20)
    a.add_argument("--compute-s", type=float, default=0.05)
    o = sub.add_parser("objects")
    o.add_argument("--url", required=True)
    o.add_argument("--batch", type=int, default=16)
    o.add_argument("--workers", type=int, default=4)
    o.add_argument("--count", type=int, default=1000)
    st = sub.add_parser("objectstore")
    st.add_argument("--host", required=True)
    st.add_argument("--port", type=int, required=True)
    st.add_argument("--object-bytes", type=int, default=1 << 20)
    for p in (j, r, m, a, o):
        p.add_argument("--progress", type=Path)
    ns = ap.parse_args()
    if ns.kind == "jpeg":
        jpeg(ns.images, ns.progress, ns.batch, ns.workers)
    elif ns.kind == "read":
        read(ns.file, ns.progress, ns.batch, ns.sample_bytes)
    elif ns.kind == "memory":
        memory(ns.progress, ns.dataset_bytes, ns.batch, ns.sample_bytes)
    elif ns.kind == "objects":
        objects(ns.url, ns.progress, ns.batch, ns.workers, ns.count)
    elif ns.kind == "objectstore":
        objectstore(ns.host, ns.port, ns.object_bytes)
    else:
        allreduce(ns.rank, ns.host, ns.port, ns.progress, ns.grad_bytes, ns.compute_s)


if __name__ == "__main__":
    main()
