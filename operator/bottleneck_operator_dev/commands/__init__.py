"""The offline subcommands, by name: the runtime CLI imports one of them only when it is asked for."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bottleneck_operator_dev.commands import demo, evaluate, simulate, train

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: dict[str, Register] = {
    "demo": demo.register,
    "simulate": simulate.register,
    "train": train.register,
    "evaluate": evaluate.register,
}
