"""Composition of the data layer and the analysis: windows in, verdicts out.

Used by ``analyze`` (one job), the operator's pass (all running profiled jobs at once) and
``evaluate``. Filled in as the data layer and the analysis land.
"""

from __future__ import annotations
