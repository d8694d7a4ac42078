"""bottleneck-operator: tells ML teams what limits their training jobs."""

__version__ = "0.1.0"
