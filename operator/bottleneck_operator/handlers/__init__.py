"""kopf handlers of the operator: watch profiled Jobs, analyse them, write BottleneckReports.

:func:`register_handlers` adds them to a kopf registry; ``bottleneck-operator run`` does that with
kopf's default registry, tests with a fresh one.
"""

from bottleneck_operator.handlers.operator import register_handlers

__all__ = ["register_handlers"]
