"""Family AO: labelled telemetry of GPU training Jobs on shared GPUs and elastic clusters.

Written blind, for evaluation only (docs/familyao.md): it imports the data contract and numpy alone.
"""

from bottleneck_operator_dev.familyao.family import FamilyAOJob, generate_family_ao

__all__ = ["FamilyAOJob", "generate_family_ao"]
