"""Memory: a 1 GiB in-memory dataset in a pod limited to 384 MiB of RAM plus swap.

The limit (``memory.max`` + ``memory.swap.max`` on cgroup v2, ``memory.limit_in_bytes`` +
``memory.memsw.limit_in_bytes`` on a hybrid host) keeps about a third of the working set resident;
each batch gathers 32 random 1 MiB samples, most of them swapped out, so the loader lives on major
faults and swap-ins. A swapfile is made (and removed afterwards) when the machine has no swap.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from recordings.cgroups import Limits
from recordings.harness import Context, Scenario

SWAPFILE = Path("/var/tmp/bnr-recording.swap")
DATASET = 1 << 30


def _swap_active() -> bool:
    return len(Path("/proc/swaps").read_text().splitlines()) > 1


def swapfile(size_bytes: int) -> Callable[[Context], None]:
    """A setup that makes and enables a swapfile of ``size_bytes`` when the machine has no swap."""

    def setup(ctx: Context) -> None:
        if _swap_active():
            return
        count = str(size_bytes >> 20)
        subprocess.run(["dd", "if=/dev/zero", f"of={SWAPFILE}", "bs=1M", f"count={count}", "status=none"], check=True)
        SWAPFILE.chmod(0o600)
        subprocess.run(["mkswap", "-q", str(SWAPFILE)], check=True)
        subprocess.run(["swapon", str(SWAPFILE)], check=True)
        (ctx.workdir / "made-swap").touch()

    return setup


def remove_swapfile(ctx: Context) -> None:
    """Undo :func:`swapfile`'s setup, if it made one."""
    if (ctx.workdir / "made-swap").exists():
        subprocess.run(["swapoff", str(SWAPFILE)], check=False)
        SWAPFILE.unlink(missing_ok=True)
        (ctx.workdir / "made-swap").unlink()


def _launch(ctx: Context) -> None:
    ctx.spawn(["memory", "--dataset-bytes", str(DATASET), "--batch", "32", "--progress", str(ctx.progress_file(0))])


SCENARIO = Scenario(
    name="memory",
    label="Memory",
    mechanism="host-memory-pressure",
    limited="384 MiB memory limit with 2 GiB of swap allowed, for a 1 GiB working set",
    limits=Limits(memory_bytes=384 << 20, swap_bytes=2 << 30),
    compute_s=0.05,
    h2d_bytes=32 * (1 << 20),
    launch=_launch,
    setup=swapfile(2 << 30),
    teardown=remove_swapfile,
)

if __name__ == "__main__":
    from recordings.__main__ import main

    main(["memory"])
