"""A third, blind family of labelled job windows, modelled from first principles.

A data-parallel training step is modelled as a pipeline (storage read, CPU decode, host-to-device
copy, GPU compute, gradient all-reduce); each job is given a mechanism that bounds one stage, and
the telemetry every exporter would show follows from the stage times, the hardware's published
figures and the cluster's exporter set-up. Written without reading the project's analysis or its
other families; see docs/blindfamily.md.
"""

from bottleneck_operator_dev.blindfamily.family import BlindJob, generate_blind_family

__all__ = ["BlindJob", "generate_blind_family"]
