"""Family Q: a blind evaluation family of labelled training-job windows (see docs/familyq.md)."""

from bottleneck_operator_dev.familyq.family import FamilyQJob, generate_family_q

__all__ = ["FamilyQJob", "generate_family_q"]
