"""Family K: a blind evaluation family of labelled training-job windows, for a later honest reading.

Written from the data contract (``bottleneck_operator.contract``), the project's telemetry notes
and public datasheets and documentation only; see docs/familyk.md. Nothing here is tuned against
the project's analysis, and nothing imports it.
"""

from bottleneck_operator_dev.familyk.generate import FamilyKJob, generate_family_k

__all__ = ["FamilyKJob", "generate_family_k"]
