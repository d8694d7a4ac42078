"""Family AE, a blind evaluation family: healthy training Jobs, each with one documented misconfiguration.

Written from the data contract, TELEMETRY.md and public documentation alone (docs/familyae.md).
"""

from bottleneck_operator_dev.familyae.family import FamilyAEJob, generate_family_ae

__all__ = ["FamilyAEJob", "generate_family_ae"]
