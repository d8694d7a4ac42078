#!/usr/bin/env python3
"""Write the CRDs under crds/ (BottleneckReport, ClusterBottleneckSummary) from the report models (`make crd`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))

from bottleneck_operator.reports import summary_crd  # noqa: E402
from bottleneck_operator.reports.crd import render  # noqa: E402

TARGET = ROOT / "crds" / "bottleneckreports.bottleneck.dev.yaml"

if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(ROOT)}")
    summary = ROOT / "crds" / summary_crd.FILE_NAME
    summary.write_text(summary_crd.render())
    print(f"wrote {summary.relative_to(ROOT)}")
