"""The kubectl plugin (``kubectl bottleneck ...``): BottleneckReports read through the user's kubeconfig.

:mod:`.main` is the command line, :mod:`.listing` is ``list`` (kubectl get's flags), :mod:`.render`
and :mod:`.show` print reports, :mod:`.classes` holds what each class means and what to try, and
:mod:`.krew` builds the krew archive and manifest. Finding the cluster as kubectl does
(:mod:`bottleneck_operator.kube.kubeconfig`) and reading the reports
(:mod:`bottleneck_operator.reportsource`) live below, shared with ``analyze --from-report``.
"""
