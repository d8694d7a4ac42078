"""Pure analysis: features, classifier, evidence, recommendations, headroom.

Nothing here imports kopf, a Kubernetes client or a Prometheus client (import-linter enforces it):
input is a :class:`~bottleneck_operator.contract.window.JobWindow`, output a
:class:`~bottleneck_operator.contract.verdict.Verdict`.
"""
