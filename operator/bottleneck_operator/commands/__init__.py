"""One module per subcommand: each registers its parser; heavy imports wait until it runs.

The offline commands (``demo``, ``simulate``, ``train``, ``evaluate``) live in the separate
``bottleneck_operator_dev`` package, which the image leaves out. They are found by name with
importlib, only when one of them is asked for, so that the runtime never imports that package (an
import contract holds it) and ``run`` loads none of it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from bottleneck_operator.commands import analyze, doctor, run, sidecar
from bottleneck_operator.errors import UsageError

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: tuple[Register, ...] = (
    run.register,
    sidecar.register,
    analyze.register,
    doctor.register,
)

OFFLINE_PACKAGE = "bottleneck_operator_dev"
# Listed in `--help` without loading the package; the help lines are the commands' own.
OFFLINE_COMMANDS: dict[str, str] = {
    "demo": "run the whole loop locally: API emulator, real Prometheus, simulated jobs, the operator",
    "simulate": "simulate training jobs: OpenMetrics for promtool backfilling, or live exporter endpoints",
    "train": "retrain the classifier from simulated jobs",
    "evaluate": "evaluate the model on held-out simulated jobs through a real Prometheus",
}


def offline_register(name: str) -> Register:
    """The parser registration of the offline command `name`, from the offline package.

    Raises:
        UsageError: the offline package is not installed here (the operator's image).
    """
    try:
        module = importlib.import_module(f"{OFFLINE_PACKAGE}.commands")
    except ModuleNotFoundError as exc:
        if exc.name != OFFLINE_PACKAGE:
            raise  # a dependency of the offline package is missing: a broken install, not a usage error
        raise UsageError(
            f"`{name}` is an offline command: it needs the {OFFLINE_PACKAGE} package, which this installation "
            "leaves out (as the operator's image does); install the distribution from a checkout or a wheel with "
            "`make venv` or `pip install 'bottleneck-operator[demo,train]'`"
        ) from None
    register: Register = module.COMMANDS[name]
    return register


def offline_placeholder(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    """List an offline command in `--help` without importing its package."""
    sub.add_parser(name, help=OFFLINE_COMMANDS[name], add_help=False)
