"""The kopf handlers, registered into a given registry: startup, cleanup, and the workload watchers.

Settings are applied in the startup handler and the clients kept in ``memo`` (kopf's per-operator
memo: every per-object memo is a shallow copy of it, so ``memo.state`` is shared). Handlers stay
thin: the work lives in :mod:`bottleneck_operator.controller` (reports, passes, retention).

At this boundary the project's errors become kopf's (:func:`kopf_error`): an ``Unavailable`` a
``kopf.TemporaryError`` that kopf retries after a delay, any other a ``kopf.PermanentError``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import kopf
from prometheus_client import Gauge

from bottleneck_operator.aio import stop_task
from bottleneck_operator.contract.names import POD_SECURITY_ENFORCE_LABEL, PROFILE_ANNOTATION
from bottleneck_operator.controller.access import CLIENT
from bottleneck_operator.controller.jobs import ensure_report, observe
from bottleneck_operator.controller.leader import LeaderElector, LeaseTiming, default_identity, default_namespace
from bottleneck_operator.controller.passes import freeze_long_lived, run_loop
from bottleneck_operator.controller.reports_api import ReportsApi
from bottleneck_operator.controller.state import AnalyzerLike, Clock, EventPoster, OperatorState
from bottleneck_operator.controller.state import logger as log
from bottleneck_operator.controller.workloads import KINDS, WorkloadKind
from bottleneck_operator.errors import BottleneckError, Unavailable
from bottleneck_operator.kube import Credentials, KubeClient
from bottleneck_operator.kube.exec_credential import resolved
from bottleneck_operator.kube.kubeconfig import kubeconfig_files
from bottleneck_operator.kube.kubeconfig import load as load_kubeconfig
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry.doctor import check_at_start

LoginFn = Callable[[], Any]
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
Logger = logging.Logger | logging.LoggerAdapter[Any]
# Seconds before kopf calls a handler again after an Unavailable: long enough for an API server or
# Prometheus restart, short enough that the operator starts soon after it.
RETRY_DELAY = 30.0


def kopf_error(exc: BottleneckError, what: str) -> kopf.TemporaryError | kopf.PermanentError:
    """The kopf error for one of ours: retried after a delay when the service is unavailable, else final.

    Args:
        exc: the project's error (chain it as the cause when raising the result).
        what: what the handler was doing, the message's start.
    """
    if isinstance(exc, Unavailable):
        return kopf.TemporaryError(f"{what}: {exc}", delay=RETRY_DELAY)
    return kopf.PermanentError(f"{what}: {exc}")


def kube_login(kopf_settings: kopf.OperatorSettings, logger: Logger) -> LoginFn:
    """Credentials: the service account in a cluster, else the user's kubeconfig as kubectl reads it."""

    def login() -> Any:
        if not SERVICE_ACCOUNT_TOKEN.exists() and kubeconfig_files(None):
            return kubeconfig_login(kopf_settings)
        try:
            info = kopf.login_via_client(logger=logger, settings=kopf_settings)
        except kopf.LoginError:
            info = None
        return (
            info
            or kopf.login_with_service_account(settings=kopf_settings)
            or kopf.login_with_kubeconfig(settings=kopf_settings)
        )

    return login


def kubeconfig_login(kopf_settings: kopf.OperatorSettings) -> kopf.ConnectionInfo:
    """Outside a cluster: the user's kubeconfig as kubectl reads it (``KUBECONFIG`` lists, relative
    paths, token files), its exec plugin run for a token that kopf renews when it expires."""
    target = load_kubeconfig()
    creds, expiration = resolved(target.credentials)
    return kopf.ConnectionInfo(
        server=creds.server,
        ca_path=creds.ca_path,
        ca_data=creds.ca_data,
        insecure=creds.insecure,
        username=creds.username,
        password=creds.password,
        token=creds.token,
        certificate_path=creds.certificate_path,
        certificate_data=creds.certificate_data,
        private_key_path=creds.private_key_path,
        private_key_data=creds.private_key_data,
        default_namespace=target.namespace,
        expiration=expiration,
        trust_env=kopf_settings.networking.trust_env,
    )


def check_login_outside_cluster() -> None:
    """Log in once before kopf starts when outside a cluster, so that a kubeconfig to fix or a plugin's
    login to redo stops the start with its message (exit 2) rather than in kopf's retries; later
    logins (an expired token) are kopf's, retried as it retries them.

    Raises:
        CredentialsError: the kubeconfig cannot be used or its exec plugin failed.
    """
    if not SERVICE_ACCOUNT_TOKEN.exists() and kubeconfig_files(None):
        kubeconfig_login(kopf.OperatorSettings())


def _default_analyzer(settings: Settings) -> Callable[[], AnalyzerLike]:
    def build() -> AnalyzerLike:
        from bottleneck_operator.pipeline import Analyzer

        return Analyzer.from_settings(settings)

    return build


def register_handlers(
    registry: kopf.OperatorRegistry,
    settings: Settings,
    *,
    analyzer_factory: Callable[[], AnalyzerLike] | None = None,
    clock: Clock = time.time,
    configure_kopf: Callable[[kopf.OperatorSettings], None] | None = None,
    login: LoginFn | None = None,
) -> None:
    """Register the operator's handlers.

    Args:
        registry: kopf's registry to add them to (the default one for ``run``; a fresh one in tests).
        settings: the operator's settings.
        analyzer_factory: builds the analyzer (default: ``pipeline.Analyzer.from_settings(settings)``), called once
            in a thread at startup (loading the model never blocks the event loop; a bad model file
            stops the operator at once with the reason).
        clock: "now" for analysis windows and report times (tests replay recorded days).
        configure_kopf: applied to kopf's settings at startup (``run`` passes the admission
            webhook's server configuration; the webhook's handlers are registered by its own module).
        login: Kubernetes credentials for the reports client (default: as kopf finds them).
    """
    factory = analyzer_factory or _default_analyzer(settings)
    _register_startup(registry, settings, factory, clock, configure_kopf, login)
    _register_login(registry, login)
    kopf.on.probe(id="analysis_passes", registry=registry)(_passes_alive)
    kopf.on.cleanup(id="shutdown", registry=registry)(_shutdown)
    if not settings.operation.namespaces:
        # Namespaces' Pod Security levels, for the webhook (what a Job's pods may be given). Only
        # cluster-wide, where the chart grants the namespace watch; a namespaced install knows no
        # level, and the webhook then leaves the host mount out everywhere.
        kopf.on.event("", "v1", "namespaces", id="namespace_levels", registry=registry)(_namespace_level)
    for kind in KINDS:
        # kopf resolves each resource through API discovery: a kind whose CRD is absent is not
        # served yet, and kopf's watch on CustomResourceDefinitions starts serving it once installed.
        kopf.on.event(
            kind.group,
            kind.version,
            kind.plural,
            id=kind.handler_id,
            annotations={PROFILE_ANNOTATION: kopf.PRESENT},
            registry=registry,
        )(_workload_handler(kind))


def _tune(kopf_settings: kopf.OperatorSettings) -> None:
    kopf_settings.posting.reporting_component = "bottleneck-operator"
    kopf_settings.posting.level = logging.INFO
    kopf_settings.watching.server_timeout = 300
    kopf_settings.networking.request_timeout = 60
    # At start-up every Job in the cluster arrives at once, each with a worker of its own: a
    # bounded number at a time (workers of quiet objects such as Jobs exit soon) keeps the
    # operator's memory from spiking with the cluster's size.
    kopf_settings.queueing.worker_limit = 100
    kopf_settings.queueing.idle_timeout = 0.5


def _register_startup(
    registry: kopf.OperatorRegistry,
    operator_settings: Settings,
    factory: Callable[[], AnalyzerLike],
    clock: Clock,
    configure_kopf: Callable[[kopf.OperatorSettings], None] | None,
    login: LoginFn | None,
) -> None:
    # The handler's own ``settings`` kwarg is kopf's, hence ``operator_settings`` for ours.
    @kopf.on.startup(registry=registry)
    async def configure(settings: kopf.OperatorSettings, memo: Any, logger: Logger, **_: Any) -> None:
        _tune(settings)
        if configure_kopf is not None:
            configure_kopf(settings)
        # The operator's own logger, not kopf's: `run` keeps kopf's loggers at WARNING, and this line
        # is the record of what the operator runs with.
        log.info("bottleneck-operator settings: %s", json.dumps(operator_settings.effective(), sort_keys=True))
        api = ReportsApi(login or kube_login(settings, logger), timeout=30.0)
        state = OperatorState(settings=operator_settings, api=api, analyzer_factory=factory, clock=clock)
        try:
            state.analyzer = await asyncio.to_thread(factory)
        except BottleneckError as exc:  # a refused model file is final; kopf retries an unavailable source
            await api.close()
            raise kopf_error(exc, "cannot start the analysis") from exc
        check_at_start(operator_settings, state.metrics.registry)
        freeze_long_lived()
        await state.metrics.serve(state.operation.metrics_port)
        state.loop_task = _start_loop(state, login or kube_login(settings, logger))
        memo.state = state


def _start_loop(state: OperatorState, login: LoginFn) -> asyncio.Task[None]:
    """The pass loop: at once for a single replica; with leader election, only while this replica leads."""
    own = state.operation
    leader = Gauge(
        "bottleneck_operator_leader",
        "1 while this replica runs the passes and writes (it holds the Lease, or runs alone), else 0.",
        registry=state.metrics.registry,
    )
    if not own.leader_election:
        leader.set(1)
        return asyncio.create_task(run_loop(state), name="bottleneck analysis loop")
    elector = LeaderElector(
        KubeClient(
            lambda: Credentials.from_login(login()), concurrency=2, timeout=own.lease_renew_deadline / 2, allowed=CLIENT
        ),
        own.lease_namespace or default_namespace(),
        own.lease_name,
        own.leader_identity or default_identity(),
        LeaseTiming(own.lease_duration, own.lease_renew_deadline, own.lease_retry_period),
        on_change=lambda leading: leader.set(1 if leading else 0),
    )
    state.leading = lambda: elector.leading

    async def lead() -> None:
        # Another replica may have written every report since this one last led: adopt them afresh.
        for job in state.jobs.values():
            job.report_ready = False
        await run_loop(state)

    async def contend() -> None:
        try:
            await elector.run(lead)
        finally:
            await elector.kube.close()

    return asyncio.create_task(contend(), name="bottleneck leader election")


def _register_login(registry: kopf.OperatorRegistry, login: LoginFn | None) -> None:
    @kopf.on.login(registry=registry)
    def credentials(settings: kopf.OperatorSettings, logger: Logger, **_: Any) -> Any:
        # A registry of our own carries no default login handler: kopf and the reports client
        # find their credentials the same way.
        return (login or kube_login(settings, logger))()


def _passes_alive(memo: Any, **_: Any) -> dict[str, float | None] | str:
    """The liveness probe's view of the pass loop: a stuck pass fails it (see controller.health)."""
    state: OperatorState | None = getattr(memo, "state", None)
    if state is None:
        return "starting"
    stuck = state.health.stuck()
    if stuck is not None:
        raise kopf.PermanentError(stuck)  # permanent: kopf answers the probe now, with a 500
    return state.health.summary()


async def _shutdown(memo: Any, **_: Any) -> None:
    state: OperatorState | None = getattr(memo, "state", None)
    if state is None:
        return
    await stop_task(state.loop_task)
    await state.metrics.stop()
    await state.api.close()
    log.info("bottleneck-operator stopped")


def kopf_poster() -> EventPoster:
    """Post Events through kopf's poster from anywhere, via a copy of the current handler's context.

    ``kopf.event()`` finds its queue through context variables that kopf sets for the per-object
    handler tasks; the pass loop is not one of them, so it posts through a copy of a handler's
    context (the queue is operator-wide, so any handler's copy will do).
    """
    context = contextvars.copy_context()

    def post(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
        try:
            context.run(kopf.event, kopf.Body(cast(kopf.RawBody, body)), type=type_, reason=reason, message=message)
        except LookupError:  # no poster in that context (should not happen): the log line stands
            logging.getLogger(__name__).debug("no event poster available for %s", body.get("metadata"))

    return post


async def _namespace_level(event: kopf.RawEvent, body: kopf.Body, memo: Any, **_: Any) -> None:
    state: OperatorState | None = getattr(memo, "state", None)
    name = body.get("metadata", {}).get("name")
    if state is None or not name:
        return
    if state.poster is None:  # namespaces arrive first: the webhook can post Events from the start
        state.poster = kopf_poster()
    if event.get("type") == "DELETED":
        state.namespace_levels.pop(name, None)
    else:
        state.namespace_levels[name] = str(
            (body.get("metadata", {}).get("labels") or {}).get(POD_SECURITY_ENFORCE_LABEL, "")
        )


def _workload_handler(kind: WorkloadKind) -> Callable[..., Any]:
    async def profiled(event: kopf.RawEvent, body: kopf.Body, memo: Any, logger: Logger, **_: Any) -> None:
        await _profiled(kind, event, body, memo, logger)

    profiled.__name__ = profiled.__qualname__ = kind.handler_id
    return profiled


async def _profiled(kind: WorkloadKind, event: kopf.RawEvent, body: kopf.Body, memo: Any, logger: Logger) -> None:
    state: OperatorState = memo.state
    if state.poster is None:
        state.poster = kopf_poster()
    job = observe(state, body, event_type=event.get("type"), kind=kind)
    if job is None or not state.leading():  # a follower keeps its cache (the webhook reads it) and writes nothing
        return
    try:
        await ensure_report(state, job)
    except BottleneckError as exc:
        state.metrics.errors.labels("kubernetes").inc()
        state.request_pass()  # the pass loop tries every report not in place again
        if isinstance(exc, Unavailable):
            # kopf never retries an event handler: the pass loop's retry is the one there is.
            logger.warning("cannot create the report yet: %s", exc)
            return
        # Refused (RBAC, every name another's): kopf logs it against the workload, as an Event.
        raise kopf_error(exc, "cannot create the report") from exc
    state.request_pass()  # a first verdict (or the final one) without waiting for the schedule
