"""Family E: a blind evaluation family of labelled training-job windows.

Written from published figures and the data contract alone (see docs/familye.md); it imports
nothing of the project but ``bottleneck_operator.contract``.
"""

from bottleneck_operator_dev.familye.family import FamilyEJob, generate_family_e

__all__ = ["FamilyEJob", "generate_family_e"]
