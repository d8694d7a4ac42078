"""BottleneckReport: the pydantic models (:mod:`.model`) and how a verdict becomes a status (:mod:`.build`).

``ReportStatus`` is what the operator writes to ``.status`` and what ``analyze --output json`` prints:
one shape for both, snake_case in Python, the CRD's camelCase only at the API boundary: a whole
report is read with :func:`read_report` (a status alone with :func:`read_status`), written with
``ReportStatus.dump()``. The cluster's summary is read the same way, with :func:`read_summary`. No
module outside this package reads a report's or the summary's camelCase keys (a test checks the
package's source).
"""

from bottleneck_operator.reports.build import rfc3339, status_from_verdict
from bottleneck_operator.reports.document import (
    BottleneckReport,
    Lifecycle,
    ReportMetadata,
    as_report,
    read_lifecycle,
    read_report,
)
from bottleneck_operator.reports.model import (
    FINAL_PHASES,
    AnalysisWindow,
    CapacityItem,
    ClassName,
    Condition,
    DataQualityStatus,
    EvidenceItem,
    HeadroomRange,
    JobRef,
    Phase,
    PodBreakdown,
    RecommendationItem,
    ReportSpec,
    ReportStatus,
    TimelineEntry,
)
from bottleneck_operator.reports.read import read_status
from bottleneck_operator.reports.summary_document import (
    ClusterBottleneckSummary,
    as_summary_status,
    read_summary,
    read_summary_status,
)

__all__ = [
    "FINAL_PHASES",
    "AnalysisWindow",
    "BottleneckReport",
    "CapacityItem",
    "ClassName",
    "ClusterBottleneckSummary",
    "Condition",
    "DataQualityStatus",
    "EvidenceItem",
    "HeadroomRange",
    "JobRef",
    "Lifecycle",
    "Phase",
    "PodBreakdown",
    "RecommendationItem",
    "ReportMetadata",
    "ReportSpec",
    "ReportStatus",
    "TimelineEntry",
    "as_report",
    "as_summary_status",
    "read_lifecycle",
    "read_report",
    "read_status",
    "read_summary",
    "read_summary_status",
    "rfc3339",
    "status_from_verdict",
]
