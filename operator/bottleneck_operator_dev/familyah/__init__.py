"""Family AH: a blind evaluation family of GPU training Jobs from an operator-level roofline model."""

from bottleneck_operator_dev.familyah.generate import FamilyAHJob, generate_family_ah

__all__ = ["FamilyAHJob", "generate_family_ah"]
