"""Family AG: a blind evaluation family of GPU training Jobs, from a discrete-event step timeline.

See docs/familyag.md. Only :func:`generate_family_ag` and :class:`FamilyAGJob` are public.
"""

from bottleneck_operator_dev.familyag.generate import FamilyAGJob, generate_family_ag

__all__ = ["FamilyAGJob", "generate_family_ag"]
