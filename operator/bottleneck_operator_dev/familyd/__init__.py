"""Family D: a scenario family written blind, for one honest evaluation of the classifier.

Written from the data contract (``bottleneck_operator.contract``), the project's design and
telemetry notes, the issue that asked for it and public documentation alone - without reading the
analysis, the simulator, the other scenario families or any result on them. It imports the
contract and numpy only (an import-linter contract holds it to that). How it models a training
step and its telemetry: docs/familyd.md.
"""

from bottleneck_operator_dev.familyd.family import FamilyDJob, generate_family_d

__all__ = ["FamilyDJob", "generate_family_d"]
