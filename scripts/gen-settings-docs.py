#!/usr/bin/env python3
"""Write docs/settings.md from the Settings class, so the table never drifts from the code.

Usage: python scripts/gen-settings-docs.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bottleneck_operator.settings import GROUPS

TARGET = Path(__file__).resolve().parent.parent / "docs" / "settings.md"


def render() -> str:
    lines = [
        "# Settings",
        "",
        "Generated from `operator/bottleneck_operator/settings_groups.py` by `scripts/gen-settings-docs.py`; do not edit.",
        "",
        "Each setting is read from a command-line flag where the command has one, else from the environment",
        "variable shown, else the default. Lists and mappings are JSON in the environment.",
        "",
        "The settings are loaded in one place and nested by concern: each field is declared once, in its",
        "group, and each part of the code takes only its group (`Settings.prometheus`, `Settings.labels`, ...),",
        "one table below each. The environment variable is named after the field alone, whatever its group.",
    ]
    for prop, group in GROUPS:
        summary = (group.__doc__ or "").strip().rstrip(".")
        # The defaults as the environment would spell them (JSON; scrape_jobs as its mapping).
        defaults = group().model_dump(mode="json")
        lines += ["", f"## {summary} (`Settings.{prop}`)", "", "| environment variable | default | description |"]
        lines.append("| --- | --- | --- |")
        for name, field in group.model_fields.items():
            default = defaults[name]
            shown = "(none)" if default is None else f"`{json.dumps(default)}`"
            lines.append(f"| `BOTTLENECK_{name.upper()}` | {shown} | {field.description or ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python scripts/gen-settings-docs.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
