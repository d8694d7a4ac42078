"""What the operator does, without kopf: the Job cache, the analysis pass loop, the report writer,
retention and the operator's own metrics.

:mod:`bottleneck_operator.handlers` wires these into kopf; nothing here imports kopf, so the loop
and the report rules are exercised without an operator framework.
"""
