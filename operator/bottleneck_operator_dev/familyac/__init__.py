"""Family AC: a blind evaluation family of discrete-event step timelines, labelled by the critical path.

Stored unread: not to be read before its blind reading. See docs/familyac.md.

Modules by concern: ``hardware`` (figures), ``workload`` (the draw), ``stages`` (event durations),
``timeline`` (the discrete-event run), ``label`` (the critical path's class), ``sources``,
``context``, ``dcgm``, ``host``, ``node`` (the exporters), ``family`` (the interface).
"""

from bottleneck_operator_dev.familyac.family import FamilyACJob, generate_family_ac

__all__ = ["FamilyACJob", "generate_family_ac"]
