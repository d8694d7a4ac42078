"""Family V: blind evaluation windows from closed queueing networks solved by exact MVA.

Each job's training loop is a closed network whose customers are the batches in flight; the
label is the class of the resource whose halved demand raises the job's throughput most. See
docs/familyv.md.
"""

from __future__ import annotations

from bottleneck_operator_dev.familyv.generate import FamilyVJob, generate_family_v

__all__ = ["FamilyVJob", "generate_family_v"]
