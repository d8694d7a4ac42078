"""Every setting of the operator, the analyzer and the collector, loaded and validated in one place.

Precedence: command-line flag, else environment variable ``BOTTLENECK_<FIELD>`` (upper case), else
the default. Lists and mappings are given as JSON in the environment, e.g.
``BOTTLENECK_NAMESPACES='["ml","research"]'`` or ``BOTTLENECK_PROMETHEUS_HEADERS='{"X-Scope-OrgID":"team-a"}'``.

Each field is declared once, in its concern's model in :mod:`bottleneck_operator.settings_groups`,
and :class:`Settings` nests those models as kopf's ``OperatorSettings`` nests its own:
:attr:`Settings.prometheus` (connection), :attr:`Settings.labels` (label mapping),
:attr:`Settings.analysis`, :attr:`Settings.injection` (webhook and collector) and
:attr:`Settings.operation`. The names outside stay flat: the environment variable of
``settings.analysis.step`` is ``BOTTLENECK_STEP``, and ``Settings(step=15.0)`` sets it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from copy import copy
from typing import Any, Self

from pydantic import BaseModel, Field, create_model, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from bottleneck_operator.settings_groups import GROUPS as GROUPS
from bottleneck_operator.settings_groups import AnalysisSettings as AnalysisSettings
from bottleneck_operator.settings_groups import ExporterFamily as ExporterFamily
from bottleneck_operator.settings_groups import InjectionSettings as InjectionSettings
from bottleneck_operator.settings_groups import LabelSettings as LabelSettings
from bottleneck_operator.settings_groups import OperationSettings as OperationSettings
from bottleneck_operator.settings_groups import PrometheusSettings as PrometheusSettings
from bottleneck_operator.settings_groups import redact_url as redact_url


def setting_fields() -> Iterator[tuple[str, str, FieldInfo]]:
    """Every setting as (group, field name, its declaration), in the order the docs list them."""
    for group, model in GROUPS:
        for name, field in model.model_fields.items():
            yield group, name, field


def group_of(groups: tuple[tuple[str, type[BaseModel]], ...]) -> dict[str, str]:
    """Each field's name -> the name of the group that declares it.

    Raises:
        TypeError: two groups declare the same name (it would be one environment variable).
    """
    owner: dict[str, str] = {}
    for group, model in groups:
        for name in model.model_fields:
            if name in owner:
                raise TypeError(f"setting {name!r} is declared in both {owner[name]!r} and {group!r}")
            owner[name] = group
    return owner


GROUP_OF: dict[str, str] = group_of(GROUPS)


class _FlatEnvironment(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BOTTLENECK_", extra="ignore")


# Every field at the top level, so pydantic-settings reads BOTTLENECK_<FIELD> for each (JSON for lists
# and mappings) exactly as it would for a flat class; only read from, never instantiated.
_FLAT_FIELDS: dict[str, Any] = {name: (field.annotation, copy(field)) for _, name, field in setting_fields()}
_FLAT: type[BaseSettings] = create_model("FlatEnvironment", __base__=_FlatEnvironment, **_FLAT_FIELDS)


def _nest(data: dict[str, Any]) -> dict[str, Any]:
    """Flat names moved into their group: over the group's other values, whether given as a dict or whole."""
    routed: dict[str, Any] = {k: v for k, v in data.items() if k not in GROUP_OF}
    for name, value in data.items():
        group = GROUP_OF.get(name)
        if group is None:
            continue
        given = routed.get(group)
        nested = dict(given) if isinstance(given, BaseModel | dict) else {}
        nested[name] = value
        routed[group] = nested
    return routed


class EnvironmentSource(EnvSettingsSource):
    # Nested before the sources are merged, so a group given whole as a keyword argument replaces
    # the environment's values for it, as any keyword argument does.
    def __call__(self) -> dict[str, Any]:
        return _nest(super().__call__())


class Settings(BaseSettings):
    # hide_input_in_errors: a rejected value (a URL with its user:password) is named, never echoed.
    model_config = SettingsConfigDict(
        env_prefix="BOTTLENECK_", extra="ignore", validate_default=True, hide_input_in_errors=True
    )

    prometheus: PrometheusSettings = Field(
        default_factory=PrometheusSettings, description="How to reach the PromQL API."
    )
    labels: LabelSettings = Field(
        default_factory=LabelSettings, description="Which labels carry what, where installations differ."
    )
    analysis: AnalysisSettings = Field(
        default_factory=AnalysisSettings, description="Windows, resolution and the classifier's thresholds."
    )
    injection: InjectionSettings = Field(
        default_factory=InjectionSettings, description="The admission webhook and the collector it injects."
    )
    operation: OperationSettings = Field(
        default_factory=OperationSettings, description="What the operator watches, keeps and serves."
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The flat environment replaces the nested one (BOTTLENECK_PROMETHEUS__...), so every variable
        # keeps its name; keyword arguments still come first.
        return init_settings, EnvironmentSource(_FLAT)

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        return _nest(data) if isinstance(data, dict) else data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, as pydantic makes it (``update`` is not validated), where a flat name in ``update``
        changes the field of its group, as it would in the constructor, rather than being dropped."""
        routed: dict[str, Any] = {k: v for k, v in (update or {}).items() if k not in GROUP_OF}
        for name, value in (update or {}).items():
            group = GROUP_OF.get(name)
            if group is not None:
                routed[group] = routed.get(group, getattr(self, group)).model_copy(update={name: value})
        return super().model_copy(update=routed or None, deep=deep)

    def effective(self) -> dict[str, Any]:
        """The settings as a flat dict (the environment's names) with secrets masked: logged once at start."""
        data: dict[str, Any] = {}
        for group, _ in GROUPS:
            data.update(getattr(self, group).model_dump(mode="json"))
        data["prometheus_url"] = redact_url(self.prometheus.prometheus_url)
        if self.prometheus.prometheus_password is not None:
            data["prometheus_password"] = "***"  # noqa: S105 - a mask, not a password
        if data.get("prometheus_headers"):
            data["prometheus_headers"] = {k: "***" for k in data["prometheus_headers"]}
        return data
