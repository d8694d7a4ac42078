"""Family N: a blind evaluation family of labelled training-job windows (see docs/familyn.md).

Written from the data contract (``bottleneck_operator.contract``), public documentation and
datasheets alone, for a later, single reading of the classifier; nothing is tuned against it.
"""

from bottleneck_operator_dev.familyn.family import FamilyNJob, generate_family_n

__all__ = ["FamilyNJob", "generate_family_n"]
