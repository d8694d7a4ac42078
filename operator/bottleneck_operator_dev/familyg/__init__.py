"""Family G: a blind evaluation family of labelled training-job windows (docs/familyg.md).

Written from the data contract, public datasheets and kernel/exporter documentation alone; it
imports nothing of the project but ``bottleneck_operator.contract``. Stored for a later reading:
nothing is tuned against it.
"""

from bottleneck_operator_dev.familyg.family import FamilyGJob, generate_family_g

__all__ = ["FamilyGJob", "generate_family_g"]
