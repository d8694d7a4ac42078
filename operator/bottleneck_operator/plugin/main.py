"""``kubectl-bottleneck``: BottleneckReports for people, as a kubectl plugin (``kubectl bottleneck ...``).

Exit codes follow kubectl's: 0 success, 1 any error (a report that does not exist, an API that
cannot be reached, a bad flag or class name). Errors print one line on stderr, worded as kubectl
words them; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

from bottleneck_operator import __version__
from bottleneck_operator.errors import EXIT_INTERNAL, EXIT_OK, BottleneckError
from bottleneck_operator.kube.kubeconfig import Target, load
from bottleneck_operator.plugin import classes, listing, summary
from bottleneck_operator.plugin.render import explain_text, use_colour
from bottleneck_operator.plugin.show import describe
from bottleneck_operator.reportsource import KubectlError, get_report, typed

if TYPE_CHECKING:
    from bottleneck_operator.contract.window import JobWindow
    from bottleneck_operator.reports import BottleneckReport

PROG = "kubectl bottleneck"


class _Parser(argparse.ArgumentParser):
    """argparse that fails as kubectl does: ``error: ...``, a pointer to --help, exit code 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INTERNAL, f"error: {message}\nSee '{self.prog} --help' for usage.\n")


def _kube_flags(parser: argparse.ArgumentParser, *, namespaced: bool = True) -> None:
    g = parser.add_argument_group("kubectl flags")
    g.add_argument("--kubeconfig", help="path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    g.add_argument("--context", help="the kubeconfig context to use (default: its current context)")
    if namespaced:
        g.add_argument("-n", "--namespace", help="the namespace (default: the context's namespace)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Read BottleneckReports: what limits each profiled training Job, why, and what to try.",
        epilog="Exit codes: 0 success, 1 error (as kubectl's).",
    )
    parser.add_argument("--version", action="version", version=f"kubectl-bottleneck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    p = sub.add_parser("list", help="the reports as a table (like kubectl get bnr)", aliases=["ls"])
    _kube_flags(p)
    listing.add_list_flags(p)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="one report in full: evidence, advice, headroom, pods, timeline")
    _kube_flags(p)
    p.add_argument("name", metavar="NAME", help="the report's name (the Job's name)")
    p.add_argument("-o", "--output", choices=("json", "yaml", "wide"), help="output format (default: text)")
    p.add_argument("--html", metavar="FILE", help="also write the report as one self-contained HTML page")
    _show_prometheus_flags(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("explain", help="what a class means, its mechanisms, and what to try")
    p.add_argument("cls", metavar="CLASS", help=f"one of {', '.join(classes.names())} (any case)")
    p.add_argument("-o", "--output", choices=("json", "yaml"), help="output format (default: text)")
    p.set_defaults(func=cmd_explain)

    summary.add_parser(sub, _kube_flags)

    p = sub.add_parser("doctor", help="check what the analysis can say from a Prometheus, and how to fix gaps")
    _doctor_flags(p)
    p.set_defaults(func=cmd_doctor)
    return parser


def _show_prometheus_flags(parser: argparse.ArgumentParser) -> None:
    from bottleneck_operator.commands._common import add_prometheus_flags

    # Optional: with a Prometheus, show draws the Job's GPU activity under its verdict timeline and
    # the HTML page gains its signal plots. Only an explicit --prometheus-url turns this on.
    add_prometheus_flags(parser)


def _doctor_flags(parser: argparse.ArgumentParser) -> None:
    from bottleneck_operator.commands._common import add_prometheus_flags

    add_prometheus_flags(parser)
    parser.add_argument("-n", "--namespace", help="look at this namespace's pods only (default: all)")
    parser.add_argument("--at", type=float, help="evaluation time, unix seconds (default: now)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")


def _target(args: argparse.Namespace) -> Target:
    return load(args.kubeconfig, args.context)


def _name(what: str, value: str) -> str:
    from bottleneck_operator.telemetry.plan.names import validate_k8s_name

    try:
        return validate_k8s_name(what, value)
    except BottleneckError as exc:
        raise KubectlError(f"error: {exc}") from exc


def _dump(data: Any, output: str) -> str:
    if output == "json":
        return json.dumps(data, indent=4)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def cmd_list(args: argparse.Namespace) -> int:
    target = _target(args)
    namespace = None if args.all_namespaces else _name("namespace", args.namespace or target.namespace)
    return listing.cmd_list(args, target, namespace)


def cmd_show(args: argparse.Namespace) -> int:
    target = _target(args)
    namespace = _name("namespace", args.namespace or target.namespace)
    raw = get_report(target, namespace, _name("report name", args.name))
    if args.output in ("json", "yaml") and not (args.prometheus_url or args.html):
        print(_dump(raw, args.output))  # as the API holds it, without reading it
        return EXIT_OK
    report = typed(raw)
    window, gpu = None, None
    if args.prometheus_url:
        from bottleneck_operator.plugin import activity

        spans = activity.spans(report.status)
        window = activity.fetch(args, namespace, report.job_name or args.name, spans)
        gpu = activity.per_window(window, spans)
    if args.html:
        _write_html(report, args.html, f"{namespace}/{args.name}", window)
    if args.output in ("json", "yaml"):
        print(_dump(raw, args.output))
    else:
        print(describe(report, colour=use_colour(sys.stdout), gpu=gpu))
    return EXIT_OK


def _write_html(report: BottleneckReport, path: str, name: str, window: JobWindow | None) -> None:
    from bottleneck_operator.html import write_html

    write_html(report.status, Path(path), window=window, name=name)
    print(f"HTML report written to {path}", file=sys.stderr)


def cmd_explain(args: argparse.Namespace) -> int:
    found = classes.lookup(args.cls)
    if found is None:
        raise KubectlError(f'error: unknown class "{args.cls}": want one of {", ".join(classes.names())}')
    if args.output:
        print(_dump(classes.as_dict(found), args.output))
    else:
        print(explain_text(found, use_colour(sys.stdout)))
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    # The operator's own doctor does the checking; this plugin only maps its exit codes onto kubectl's.
    from bottleneck_operator.commands import doctor

    code = doctor.main(args)
    return EXIT_OK if code == EXIT_OK else EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    """The plugin's entry point (the ``kubectl-bottleneck`` console script)."""
    args = build_parser().parse_args(argv)
    # kubectl stays quiet while it retries: only the final error reaches the user, as one line.
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    try:
        return int(args.func(args))
    except KubectlError as exc:
        print(str(exc), file=sys.stderr)
    except BottleneckError as exc:  # credentials, names, Prometheus (doctor): one line, kubectl's prefix
        print(f"error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kubectl bottleneck list | head`
        return EXIT_OK
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
