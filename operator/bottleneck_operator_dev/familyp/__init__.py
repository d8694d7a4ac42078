"""Family P: a blind evaluation family drawn from a shared, heterogeneous, multi-tenant GPU cluster.

Written from the data contract, published datasheets and kernel/exporter documentation alone (see
docs/familyp.md); it imports nothing of the analysis, the simulator or the other families.
"""

from bottleneck_operator_dev.familyp.family import FamilyPJob, generate_family_p

__all__ = ["FamilyPJob", "generate_family_p"]
