"""The job record the exporters and the window renderer read: nodes, pods, the scenario and the state.

``jobs.SimulatedJob`` is the one implementation; the renderers depend on this protocol rather than on
``jobs`` so that ``jobs`` can import them (``SimulatedJob.to_window``) without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bottleneck_operator_dev.simulation.scenario import Scenario
from bottleneck_operator_dev.simulation.state import JobState


@dataclass(frozen=True)
class SimNode:
    """A node hosting some of the job's pods."""

    name: str
    ip: str
    cpus: int
    mem_bytes: float
    gpus: int

    @property
    def instance(self) -> str:
        """node-exporter's ``instance`` label (ip:9100)."""
        return f"{self.ip}:9100"


@dataclass(frozen=True)
class SimPod:
    """One pod of a simulated job."""

    pod: str
    node: str
    gpu_count: int
    gpu_model: str
    uid: str = ""
    ip: str = ""
    first_gpu: int = 0  # index of its first GPU on the node


class JobRecord(Protocol):
    """What rendering a simulated job needs (see ``jobs.SimulatedJob`` for the meaning of each field)."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...

    @property
    def pods(self) -> tuple[SimPod, ...]: ...

    @property
    def nodes(self) -> tuple[SimNode, ...]: ...

    @property
    def neighbours(self) -> tuple[tuple[tuple[str, str, str], ...], ...]: ...

    @property
    def params(self) -> Scenario: ...

    @property
    def state(self) -> JobState: ...
