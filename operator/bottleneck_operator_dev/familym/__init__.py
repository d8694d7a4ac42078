"""Family M: a blind evaluation family of labelled training-job windows, written from the data contract,
published hardware figures and the exporters' documentation alone (see docs/familym.md).

It imports only :mod:`bottleneck_operator.contract` (import-linter holds it to that) and needs no
network and no files.
"""

from bottleneck_operator_dev.familym.family import FamilyMJob, generate_family_m

__all__ = ["FamilyMJob", "generate_family_m"]
