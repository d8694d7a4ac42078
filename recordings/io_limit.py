"""IO: random 128 KiB reads of a 768 MiB file under a read-bandwidth limit of 12 MB/s on the real disk.

The limit (``io.max rbps`` on cgroup v2, ``blkio.throttle.read_bps_device`` on a hybrid host) is
set on the disk that holds the file. Every sample is evicted from the page cache after it is read
(``posix_fadvise(DONTNEED)``), and the whole file once after it is written, so every read reaches
the disk and waits for the throttle: the virtual GPU (50 ms per 32-sample batch) waits for input.
"""

from __future__ import annotations

import os

from recordings.cgroups import Limits, block_device_of
from recordings.harness import REPO, Context, Scenario

FILE_BYTES = 768 << 20
READ_BPS = 12_000_000


def write_samples(ctx: Context) -> None:
    """The sample file, written once and evicted from the page cache so that every read reaches the disk."""
    path = ctx.workdir / "samples.bin"
    if not path.exists() or path.stat().st_size != FILE_BYTES:
        with path.open("wb") as f:
            for _ in range(FILE_BYTES >> 24):
                f.write(os.urandom(1 << 24))
            f.flush()
            os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _launch(ctx: Context) -> None:
    ctx.spawn(["read", "--file", str(ctx.workdir / "samples.bin"), "--batch", "32",
               "--progress", str(ctx.progress_file(0))])  # fmt: skip


def scenario() -> Scenario:
    dev, name = block_device_of(REPO)
    return Scenario(
        name="io",
        label="IO",
        mechanism="local-disk",
        limited=f"reads limited to {READ_BPS / 1e6:g} MB/s on {name} ({dev}), page cache evicted after each read",
        limits=Limits(read_bps=(dev, READ_BPS)),
        compute_s=0.05,
        h2d_bytes=32 * 3 * 224 * 224 * 4,
        launch=_launch,
        setup=write_samples,
    )


if __name__ == "__main__":
    from recordings.__main__ import main

    main(["io"])
