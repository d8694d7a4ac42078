"""Family AB: a blind evaluation family whose Jobs mirror published GPU training fleets.

Each Job's configuration (workload, scale, GPU, interconnect, storage and data format, loader,
limits, precision, neighbours, power caps, exporters) is drawn from fleet-like distributions, and
its label follows from the configuration through a stage model of the training step. Written
without sight of the project's analysis; see docs/familyab.md.
"""

from bottleneck_operator_dev.familyab.family import FamilyABJob, generate_family_ab

__all__ = ["FamilyABJob", "generate_family_ab"]
