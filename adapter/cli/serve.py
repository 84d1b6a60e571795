"""``hybrid serve``: the compare page, ``/search`` and a stored evaluation's report, with the model
kept loaded (adapter.serve)."""

from __future__ import annotations

import argparse
import ipaddress
import sys

from adapter.cli.common import with_allow_model, with_url
from adapter.errors import InputError

LOOPBACK = "127.0.0.1"


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = with_url(sub.add_parser("serve", help="a local web page comparing configurations side by side, /search as JSON, "
                                                  "and an evaluation's report; the model stays loaded"))
    serve.add_argument("--index", required=True)
    serve.add_argument("--port", type=int, default=8765, help="default %(default)s")
    serve.add_argument("--host", default=LOOPBACK,
                       help="address to listen on (default %(default)s, this machine only). Another address serves the index to "
                            "anyone who can reach it, with no authentication")
    serve.add_argument("--report", metavar="DIR", help="also serve the report of a stored evaluation (hybrid eval --report DIR) at /report/")
    serve.add_argument("--reranker", metavar="MODEL", help="a cross-encoder, so columns can rerank (default: none)")
    serve.add_argument("--embedder", help="default: the embedder recorded in the index")
    with_allow_model(serve)
    serve.set_defaults(func=run)


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    from adapter.engines import describe_url

    if not 0 < args.port < 65536:
        raise InputError(f"--port must be from 1 to 65535, got {args.port}")
    try:
        import uvicorn

        from adapter.serve import SearchService, create_app
    except ImportError as exc:
        from adapter._optional import install_hint

        raise InputError(f"hybrid serve needs the serve extra: {install_hint('serve')} ({exc.name} is missing)") from None
    from adapter.cli.search import open_searcher

    searcher = open_searcher(args, args.reranker)
    service = SearchService(searcher, cluster=describe_url(searcher.client), reranker=args.reranker)
    app = create_app(service, report_dir=args.report)
    seconds = service.warm()
    if not loopback(args.host):
        print(f"warning: serving {args.index} on {args.host}:{args.port} with no authentication: anyone who can reach this address "
              "can search the index (read-only) and read the report", file=sys.stderr)
    print(f"serving {args.index} ({service.info.engine} {service.info.version} at {service.info.cluster}) on "
          f"http://{args.host}:{args.port}/ ; model loaded in {seconds:.1f} s" + (f"; report at /report/" if args.report else ""))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
