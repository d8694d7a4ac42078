"""The names and types every part of the project shares, at the bottom of the import graph.

- :mod:`.names`: API group, kinds, annotations, labels, the collector's container name and defaults;
- :mod:`.annotations`: the one parser of the opt-in annotations (the operator and the webhook both
  use it, so a Job is profiled exactly when it gets a collector);
- :mod:`.signals`, :mod:`.window`, :mod:`.sampling`: what the data layer hands the analysis;
- :mod:`.verdict`: what the analysis hands back.

Nothing here imports another part of the package (import-linter enforces it).
"""
