"""Family J: a blind evaluation family of labelled training-job windows.

Written from the data contract (``bottleneck_operator.contract``), public datasheets and the
exporters' and kernel's documentation alone, without reading the analysis, the simulator or the
other families. Each job comes from a model of its training step (stages and what bounds them) and
of what each exporter shows of it; its label is the stage whose removal shortens the step most.
See docs/familyj.md.
"""

from bottleneck_operator_dev.familyj.family import FamilyJJob, generate_family_j

__all__ = ["FamilyJJob", "generate_family_j"]
