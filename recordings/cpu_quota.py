"""CPU: JPEG-decoding data loaders, one under a CPU quota and one with too few workers.

The loader decodes, resizes, flips and blurs 16 photos per batch.

- ``cpu`` (throttled): two Pillow workers under a quota of 0.25 cores (``cpu.max`` on cgroup v2,
  ``cpu.cfs_quota_us`` on a hybrid host), less than they get on a busy shared node, so the workers
  are throttled in most CFS periods and the virtual GPU (50 ms per batch) waits for input.
- ``loader`` (too-few-workers): one worker and no quota. It keeps one core busy while the machine's
  other cores idle, and the virtual GPU (50 ms per batch) waits for it; more workers would feed it.
"""

from __future__ import annotations

from recordings.cgroups import Limits
from recordings.harness import Context, Scenario
from recordings.workloads import make_jpegs


def write_jpegs(ctx: Context) -> None:
    """The photos the decoding loaders read (96 JPEGs, 512x512)."""
    make_jpegs(ctx.workdir / "images", 96, 512)


def _launch(ctx: Context, workers: int = 2) -> None:
    ctx.spawn(["jpeg", "--images", str(ctx.workdir / "images"), "--batch", "16", "--workers", str(workers),
               "--progress", str(ctx.progress_file(0))])  # fmt: skip


def _launch_one(ctx: Context) -> None:
    _launch(ctx, workers=1)


SCENARIO = Scenario(
    name="cpu",
    label="CPU",
    mechanism="throttled",
    limited="CPU quota of 0.25 cores on the loader's cgroup (two decode workers)",
    limits=Limits(cpu_cores=0.25),
    compute_s=0.05,
    h2d_bytes=16 * 3 * 224 * 224 * 4,
    launch=_launch,
    setup=write_jpegs,
)

FEW_WORKERS = Scenario(
    name="loader",
    label="CPU",
    mechanism="too-few-workers",
    limited="one decode worker, no CPU quota (the machine's other cores idle)",
    limits=Limits(),
    compute_s=0.05,
    h2d_bytes=16 * 3 * 224 * 224 * 4,
    launch=_launch_one,
    setup=write_jpegs,
)

if __name__ == "__main__":
    from recordings.__main__ import main

    main(["cpu"])
