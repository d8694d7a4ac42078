"""Project-wide checks: generated docs are current, the layout rules hold, the CLI behaves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bottleneck_operator.cli import main
from bottleneck_operator.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_settings_docs_are_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen-settings-docs.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_operator_dir_is_not_a_package() -> None:
    # A package named `operator` would shadow the standard library's module.
    assert not (ROOT / "operator" / "__init__.py").exists()
    import operator

    assert hasattr(operator, "itemgetter")


def test_every_setting_is_documented() -> None:
    from bottleneck_operator.settings import setting_fields

    missing = [name for _, name, field in setting_fields() if not field.description]
    assert missing == []
    assert [name for name, field in Settings.model_fields.items() if not field.description] == []


def test_every_setting_is_in_exactly_one_group() -> None:
    from bottleneck_operator.settings import GROUPS

    placed = [name for _, group in GROUPS for name in group.model_fields]
    assert len(placed) == len(set(placed))
    # Settings holds the groups and nothing else: no field is declared a second time at the top.
    assert sorted(Settings.model_fields) == sorted(prop for prop, _ in GROUPS)
    settings = Settings()
    for prop, group in GROUPS:
        assert isinstance(getattr(settings, prop), group)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_URL", "http://prom.example:9090")
    monkeypatch.setenv("BOTTLENECK_NAMESPACES", '["ml", "research"]')
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_HEADERS", '{"X-Scope-OrgID": "team-a"}')
    settings = Settings()
    assert settings.prometheus.prometheus_url == "http://prom.example:9090"
    assert settings.operation.namespaces == ("ml", "research")
    assert settings.prometheus.prometheus_headers == {"X-Scope-OrgID": "team-a"}


def test_effective_settings_mask_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_PASSWORD", "hunter2")
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_HEADERS", '{"Authorization": "Bearer abc"}')
    shown = repr(Settings().effective())
    assert "hunter2" not in shown
    assert "Bearer abc" not in shown


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_invalid_setting_in_environment_is_a_usage_error_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOTTLENECK_PROMETHEUS_TIMEOUT", "-5")
    code = main(["analyze", "--namespace", "ml", "--job", "train-1", "--prometheus-url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2
    assert "prometheus_timeout" in err
    assert "Traceback" not in err


def test_settings_groups_cover_every_setting_once() -> None:
    from pydantic import ValidationError

    from bottleneck_operator.settings import GROUP_OF

    settings = Settings(namespaces=["ml"], step=15.0)
    groups = [settings.prometheus, settings.labels, settings.analysis, settings.injection, settings.operation]
    names = [name for g in groups for name in type(g).model_fields]
    assert sorted(names) == sorted(GROUP_OF) and len(names) == len(set(names))
    assert settings.analysis.step == 15.0 and settings.operation.namespaces == ("ml",)
    with pytest.raises(ValidationError, match="frozen"):
        settings.analysis.step = 1.0  # type: ignore[misc]


def test_the_image_lock_carries_no_training_libraries() -> None:
    # The operator runs the exported trees with numpy: scikit-learn, SciPy and skops are for `train` only.
    pinned = {
        line.split("==")[0].strip().lower()
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if "==" in line and not line.startswith((" ", "#"))
    }
    assert "numpy" in pinned and "kopf" in pinned
    assert not pinned & {"scikit-learn", "scipy", "skops", "joblib", "kmock", "matplotlib"}
