"""One module per subcommand: each registers its parser; heavy imports wait until it runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bottleneck_operator.commands import analyze, demo, doctor, evaluate, run, sidecar, simulate, train

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: tuple[Register, ...] = (
    run.register,
    sidecar.register,
    analyze.register,
    demo.register,
    simulate.register,
    train.register,
    evaluate.register,
    doctor.register,
)
