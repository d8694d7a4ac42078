"""bottleneck-operator: tells ML teams what limits their training jobs."""

__version__ = "0.1.0"

API_GROUP = "bottleneck.dev"
API_VERSION = "v1alpha1"
PROFILE_ANNOTATION = "bottleneck.dev/profile"
SIDECAR_ANNOTATION = "bottleneck.dev/sidecar"
REPORT_KIND = "BottleneckReport"
REPORT_PLURAL = "bottleneckreports"
