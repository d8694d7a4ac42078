"""`bottleneck-operator run`: the operator (kopf), cluster-wide unless namespaces are given."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bottleneck_operator.commands._common import add_prometheus_flags, settings_from_args
from bottleneck_operator.errors import BottleneckError

if TYPE_CHECKING:
    # Not at run time: every command's module is imported to build the CLI, and the collector
    # (`sidecar`) must stay small inside profiled pods.
    from bottleneck_operator.settings import InjectionSettings

log = logging.getLogger("bottleneck_operator.run")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run",
        help="run the operator: watch profiled Jobs and write BottleneckReports",
        description=(
            "Watch batch/v1 Jobs annotated bottleneck.dev/profile=true, analyse them from Prometheus "
            "every --interval seconds and write a BottleneckReport next to each. Reaches the API server "
            "through the in-cluster service account or the usual kubeconfig."
        ),
    )
    add_prometheus_flags(parser)
    parser.add_argument(
        "--namespace",
        "-n",
        action="append",
        dest="namespaces",
        metavar="NS",
        help="watch this namespace (repeatable; globs allowed); default: the whole cluster",
    )
    parser.add_argument("--interval", type=float, help="seconds between analysis passes (default 60)")
    parser.add_argument("--window", type=float, help="sliding window analysed for running Jobs, seconds")
    parser.add_argument("--report-retention", type=float, help="seconds a finished Job's report is kept; 0: forever")
    parser.add_argument("--metrics-port", type=int, help="port of the operator's /metrics (0: off)")
    parser.add_argument("--liveness", dest="liveness_endpoint", help="kopf's liveness endpoint URL ('' : off)")
    parser.add_argument(
        "--no-webhook", dest="webhook_enabled", action="store_false", default=None, help="do not serve the webhook"
    )
    parser.add_argument(
        "--peering",
        metavar="NAME",
        help="use kopf peering NAME (for several replicas); default: standalone, one replica",
    )
    parser.set_defaults(func=main)


def _load_webhook(registry: Any, settings: InjectionSettings) -> Callable[[Any], None] | None:
    """Register the admission webhook's handler, if that part is installed; returns its kopf setup."""
    if settings.webhook_cert_dir is None and importlib.util.find_spec("certbuilder") is None:
        # kopf can only self-sign with `certbuilder`; the chart always mounts a certificate.
        log.warning(
            "admission webhook off: no certificate (set BOTTLENECK_WEBHOOK_CERT_DIR to a directory with "
            "tls.crt/tls.key, or pass --no-webhook to silence this)"
        )
        return None
    try:
        handlers = importlib.import_module("bottleneck_operator.webhook.handlers")
        server = importlib.import_module("bottleneck_operator.webhook.server")
        handlers.register(registry, settings)
    except ImportError as exc:
        log.warning("admission webhook not available (%s): running without it", exc)
        return None

    def configure(kopf_settings: Any) -> None:
        server.configure_admission(kopf_settings, settings)

    return configure


def main(args: argparse.Namespace) -> int:
    import kopf

    from bottleneck_operator.handlers import register_handlers
    from bottleneck_operator.handlers.operator import check_login_outside_cluster

    settings = settings_from_args(
        args,
        namespaces=args.namespaces,
        interval=args.interval,
        window=args.window,
        report_retention=args.report_retention,
        metrics_port=args.metrics_port,
        liveness_endpoint=args.liveness_endpoint,
        webhook_enabled=args.webhook_enabled,
    )
    if logging.getLogger().level > logging.INFO:
        # An operator's log is its record: the settings and the pass summaries are INFO. kopf's
        # per-event INFO lines ("Handler ... succeeded" for every Job update) and the HTTP library's
        # line for every request (each PromQL query, each report write: hundreds a pass) only with -v.
        logging.getLogger().setLevel(logging.INFO)
        logging.getLogger("kopf").setLevel(logging.WARNING)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
        logging.getLogger("httpx2").setLevel(logging.WARNING)
    check_login_outside_cluster()
    registry = kopf.get_default_registry()
    configure = _load_webhook(registry, settings.injection) if settings.injection.webhook_enabled else None
    register_handlers(registry, settings, configure_kopf=configure)
    try:
        kopf.run(
            registry=registry,
            standalone=args.peering is None,
            peering_name=args.peering,
            clusterwide=not settings.operation.namespaces,
            namespaces=settings.operation.namespaces,
            liveness_endpoint=settings.operation.liveness_endpoint or None,
        )
    except Exception as exc:
        # kopf raises its ActivityError (not exported at its top level) when a startup handler fails
        # for good: it carries the handlers' outcomes. Say why in one line; re-raise anything else.
        outcomes = getattr(exc, "outcomes", None)
        if not isinstance(outcomes, dict):
            raise
        failures = [o.exception for o in outcomes.values() if getattr(o, "exception", None) is not None]
        error = BottleneckError("; ".join(str(f) for f in failures) or str(exc))
        # The exit code of what stopped it (a refused model file is a usage error, 2), else 1.
        causes = [f.__cause__ for f in failures if isinstance(f.__cause__, BottleneckError)]
        error.exit_code = causes[0].exit_code if causes else error.exit_code
        raise error from exc
    return 0
