"""``hybrid serve``: the compare page, ``/search``, health, metrics and a stored evaluation's report,
with the model kept loaded (adapter.serve)."""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from adapter.cli.common import with_allow_model, with_url
from adapter.errors import ConfigurationError, InputError

LOOPBACK = "127.0.0.1"
TOKEN_ENV = "HYBRID_SERVE_TOKEN"
# What each worker of --workers N builds its app from (no secrets: those stay in the environment).
ARGS_ENV = "HYBRID_SERVE_ARGS"


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = with_url(
        sub.add_parser(
            "serve",
            help="a web page comparing configurations side by side, /search as JSON, health checks and "
            "Prometheus metrics, and an evaluation's report; the model stays loaded",
        )
    )
    serve.add_argument("--index", required=True)
    serve.add_argument("--port", type=int, default=8765, help="default %(default)s")
    serve.add_argument(
        "--host",
        default=LOOPBACK,
        help="address to listen on (default %(default)s, this machine only). Another address needs a token "
        f"({TOKEN_ENV} or --token-file): anyone who can reach it could search the index otherwise",
    )
    serve.add_argument(
        "--report",
        metavar="DIR",
        help="also serve the report of a stored evaluation (hybrid eval --report DIR) at /report/",
    )
    serve.add_argument("--reranker", metavar="MODEL", help="a cross-encoder, so columns can rerank (default: none)")
    serve.add_argument("--embedder", help="default: the embedder recorded in the index")
    _operations_arguments(serve)
    _traffic_arguments(serve)
    with_allow_model(serve)
    serve.set_defaults(func=run)


# The operations group's numbers: (option, type, default, what it sets); each help ends with its default.
_OPERATIONS: tuple[tuple[str, type[int] | type[float], float, str], ...] = (
    ("--workers", int, 1, "processes, each with its own model"),
    ("--deadline", float, 10.0, "seconds a request may take, queue included; then 503"),
    ("--concurrency", int, 16, "searches at once per worker"),
    ("--queue", int, 64, "searches that may wait for one; beyond, 503 at once"),
    ("--query-cache", int, 10_000, "query vectors kept per worker; 0: none"),
    ("--header-timeout", float, 10.0, "seconds a request has to arrive once its connection is open"),
    ("--keep-alive", float, 5.0, "seconds an idle connection stays open"),
)


def _operations_arguments(serve: argparse.ArgumentParser) -> None:
    """The operations group: workers, deadlines, concurrency and queue, caches, timeouts, hosts and the token."""
    ops = serve.add_argument_group("operations")
    for flag, kind, default, what in _OPERATIONS:
        ops.add_argument(flag, type=kind, default=default, help=f"{what} (default %(default)s)")
    ops.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a Host name this server answers to (repeat; *.example.org for its subdomains). Default: 127.0.0.1, "
        "localhost and ::1 on loopback; any elsewhere (the token guards it)",
    )
    ops.add_argument(
        "--token-file",
        metavar="FILE",
        help=f"a file holding the bearer token (else {TOKEN_ENV}); never the token itself on the command line",
    )


def _traffic_arguments(serve: argparse.ArgumentParser) -> None:
    """The live traffic group: UBI records, interleaving and the indexes they go to."""
    traffic = serve.add_argument_group("live traffic (UBI; docs/OPERATIONS.md section 6)")
    traffic.add_argument(
        "--ubi",
        action="store_true",
        help="log every search answered as a UBI query record (in the background) and answer its query_id; "
        "take the page's events on POST /events. Off by default",
    )
    traffic.add_argument(
        "--ubi-no-query-text",
        action="store_true",
        help="store no query text in the records (a hash of it groups a query's searches); implies --ubi",
    )
    traffic.add_argument(
        "--interleave",
        metavar="CANDIDATE",
        help="answer each search of the running fusion with the team-draft interleaving of it and CANDIDATE "
        "(a fusion name as --fusion takes it, or adaptive), its clicks credited (/metrics, hybrid traffic "
        "report); two searches per query; implies --ubi",
    )
    traffic.add_argument("--ubi-queries-index", default="ubi_queries", metavar="NAME", help="default %(default)s")
    traffic.add_argument("--ubi-events-index", default="ubi_events", metavar="NAME", help="default %(default)s")


def ubi_on(args: argparse.Namespace) -> bool:
    return bool(
        getattr(args, "ubi", False) or getattr(args, "ubi_no_query_text", False) or getattr(args, "interleave", None)
    )


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token(args: argparse.Namespace) -> str | None:
    """The bearer token: ``--token-file``'s content, else ``HYBRID_SERVE_TOKEN``, else None."""
    if getattr(args, "token_file", None):
        try:
            text = Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigurationError(f"cannot read --token-file {args.token_file}: {exc.strerror}") from None
        if not text:
            raise ConfigurationError(f"--token-file {args.token_file} is empty")
        _say_if_others_can_read(Path(args.token_file))
        return text
    return os.environ.get(TOKEN_ENV) or None


def _say_if_others_can_read(path: Path) -> None:
    """A notice when the token file is readable by its group or by anyone (the token is the service's only lock);
    not an error: a mounted secret (a Kubernetes volume's default 0644) may be guarded by its container instead."""
    import stat

    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        who = "anyone on this machine" if mode & 0o004 else "its group"
        print(
            f"warning: --token-file {path} is readable by {who} (mode {mode:04o}), and the token is all that guards "
            f"the service: chmod 600 {path}",
            file=sys.stderr,
        )


def settings(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(Listen, Ops, Security) from the command line, checked."""
    from adapter.serve import Ops, Security
    from adapter.serve.door import LOOPBACK_HOSTS
    from adapter.serve.server import Listen

    secret = token(args)
    if not loopback(args.host) and not secret:
        raise ConfigurationError(
            f"--host {args.host} serves the index to anyone who can reach it: set a bearer token in {TOKEN_ENV} "
            "or --token-file (clients send Authorization: Bearer <token>), or serve on 127.0.0.1 behind a proxy"
        )
    hosts = tuple(args.allowed_host) if args.allowed_host else (LOOPBACK_HOSTS if loopback(args.host) else None)
    try:
        ops = Ops(deadline=args.deadline, concurrency=args.concurrency, queue=args.queue, query_cache=args.query_cache)
        listen = Listen(
            host=args.host,
            port=args.port,
            workers=args.workers,
            header_timeout=args.header_timeout,
            keep_alive=args.keep_alive,
            graceful=args.deadline + 5,
        )
    except ValueError as exc:
        raise InputError(
            f"hybrid serve: {exc} (--port 1-65535; --workers, --concurrency >= 1; --queue, --query-cache >= 0; "
            "--deadline, --header-timeout, --keep-alive > 0)"
        ) from None
    return listen, ops, Security(hosts=hosts, token=secret)


def build_app(args: argparse.Namespace) -> Any:
    """The app for ``args`` (one worker's: its own searcher and model)."""
    from adapter.cli.search import open_searcher
    from adapter.serve import SearchService, create_app

    _, ops, security = settings(args)
    # One connection per search slot; a cluster answer slower than the deadline is not waited for.
    searcher = open_searcher(
        args, args.reranker, client_options={"pool_maxsize": ops.concurrency, "timeout": ops.deadline}
    )
    service = SearchService(searcher, cluster=searcher.cluster.describe(), reranker=args.reranker)
    traffic = None
    if ubi_on(args):
        from adapter.serve.traffic import Traffic, TrafficSettings

        traffic = Traffic.open(
            searcher,
            TrafficSettings(
                store_query_text=not getattr(args, "ubi_no_query_text", False),
                interleave=getattr(args, "interleave", None),
                queries_index=getattr(args, "ubi_queries_index", "ubi_queries"),
                events_index=getattr(args, "ubi_events_index", "ubi_events"),
            ),
        )
    return create_app(service, report_dir=args.report, ops=ops, security=security, traffic=traffic)


def worker_app() -> Any:
    """``--workers N``: each worker's app, from the arguments the command left in the environment."""
    return build_app(argparse.Namespace(**json.loads(os.environ[ARGS_ENV])))


def run(args: argparse.Namespace) -> int:
    try:
        import fastapi  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        from adapter._optional import install_hint

        raise InputError(
            f"hybrid serve needs the serve extra: {install_hint('serve')} ({exc.name} is missing)"
        ) from None
    from adapter.serve import server

    listen, _, security = settings(args)
    if listen.workers > 1:
        os.environ[ARGS_ENV] = json.dumps({k: v for k, v in vars(args).items() if k != "func"})
        app: Any = "adapter.cli.serve:worker_app"
        where = f"{args.index} with {listen.workers} workers"
    else:
        app = build_app(args)
        service = app.state.runner.service
        where = f"{args.index} ({service.info.engine} {service.info.version} at {service.info.cluster})"
    print(
        f"serving {where} on http://{_url_host(args.host)}:{args.port}/"
        + (" (token required)" if security.token else "")
        + ("; report at /report/" if args.report else "")
        + _traffic_line(args),
        flush=True,
    )
    # uvicorn answers SIGTERM by finishing the requests in flight, then raises it again for the
    # handler it found: the command's own would call that an error. Here it is the normal way to stop.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        server.run(app, listen, factory=listen.workers > 1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _traffic_line(args: argparse.Namespace) -> str:
    if not ubi_on(args):
        return ""
    text = "without query text" if args.ubi_no_query_text else "with query text"
    line = f"; UBI logging on ({args.ubi_queries_index} / {args.ubi_events_index}, {text}; events at POST /events)"
    return line + (f"; interleaving the running fusion with {args.interleave}" if args.interleave else "")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
