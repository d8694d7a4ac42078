"""Family S: blind labelled job windows built from an event timeline of training steps.

See docs/familys.md. ``generate_family_s(seed, n, start=..., step=30.0)`` returns ``n`` jobs, each a
:class:`FamilySJob` with its label, mechanism, tags and contract :class:`JobWindow`.
"""

from bottleneck_operator_dev.familys.generate import FamilySJob, generate_family_s

__all__ = ["FamilySJob", "generate_family_s"]
