"""The kubectl plugin (``kubectl bottleneck ...``): BottleneckReports read through the user's kubeconfig.

:mod:`.main` is the command line, :mod:`.kubeconfig` finds the cluster as kubectl does,
:mod:`.source` reads the reports, :mod:`.render` and :mod:`.show` print them, and :mod:`.classes`
holds what each class means and what to try.
"""
