"""The offline part of bottleneck-operator: the demo, the telemetry simulators, the scenario families
and the local Prometheus and VictoriaMetrics runners, with the commands that use them (``demo``,
``simulate``, ``train``, ``evaluate``).

It builds on the runtime package ``bottleneck_operator`` and is never imported by it: the image and
the ``run`` and ``sidecar`` commands load none of it. The runtime CLI finds these commands by name,
at run time, when this package is installed beside it (the distribution installs both; the image
holds the runtime alone).
"""
