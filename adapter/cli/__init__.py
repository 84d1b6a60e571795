"""The ``hybrid`` command line: one small module per command group, assembled here.

Heavy modules (torch, models, the cluster client) load inside the commands, so ``hybrid --help``
and ``hybrid render`` start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from types import FrameType
from typing import Iterator, NoReturn

from adapter.cli import (
    adaptive,
    check,
    contracts,
    demo,
    documents,
    evaluate,
    fast_path,
    index,
    ingest,
    judgments,
    ops,
    search,
    serve,
    traffic,
)
from adapter.cli.exits import Exit
from adapter.errors import HybridError, Terminated

COMMANDS = (
    index,
    ops,
    ingest,
    documents,
    search,
    serve,
    check,
    evaluate,
    judgments,
    adaptive,
    fast_path,
    demo,
    contracts,
    traffic,
)


class HybridParser(argparse.ArgumentParser):
    """argparse's parser (every subcommand's too), whose errors say what a newcomer needs next: a
    positional left out because it starts with ``-`` (a query such as ``-E1234``) is one for ``--``."""

    def error(self, message: str) -> NoReturn:
        if "the following arguments are required:" in message and any(a.option_strings == [] for a in self._actions):
            message += (
                f"\n(a value that starts with '-' is read as an option: put it after '--', last, e.g. "
                f"`{self.prog} --index docs -- -E1234`)"
                if self.prog.endswith(" search")
                else "\n(a value that starts with '-' is read as an option: put it after '--', last)"
            )
        super().error(message)


def unknown_hints(parser: argparse.ArgumentParser, unknown: list[str]) -> list[str]:
    """ "did you mean" for each unknown option of ``parser`` that is close to one of its own; and, for
    an argument after ``--`` taken for a positional, that ``--`` goes last."""
    import difflib

    known = sorted(o for o in parser._option_string_actions if o.startswith("--"))
    hints = []
    for token in unknown:
        if token.startswith("-") and token != "--" and token.split("=", 1)[0] not in parser._option_string_actions:
            close = difflib.get_close_matches(token.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                hints.append(f"{token}: did you mean {close[0]}?")
    if any(token in parser._option_string_actions for token in unknown):
        hints.append("options after '--' are read as values: put '--' and what starts with '-' last")
    return hints


def subcommand_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``hybrid search``'s for search), else ``parser`` itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]  # type: ignore[no-any-return]
    return parser


def build_parser() -> argparse.ArgumentParser:
    from adapter import __version__
    from adapter.local.command import add_parser as add_local_parser

    parser = HybridParser(prog="hybrid", description="OpenSearch-native hybrid search (BM25 + k-NN).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        dest="log_verbosity",
        help="log to stderr: -v retries, fallbacks and notices; -vv every request (method, path, status, took, "
        "X-Opaque-Id; never a credential)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        dest="log_quiet",
        help="log errors only (not the warnings about retries); a command's own -q is about its progress bar",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_local_parser(sub)
    for module in COMMANDS:
        module.add_parsers(sub)
    return parser


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    # As parse_args would say it, by the command's own parser, with the command's own code (`diff`: 1, since 2 means
    # drift).
    if unknown:
        command = subcommand_parser(parser, getattr(args, "command", None))
        command.print_usage(sys.stderr)
        print(f"{command.prog}: error: unrecognized arguments: {' '.join(unknown)}", file=sys.stderr)
        for hint in unknown_hints(command, unknown):
            print(f"  {hint}", file=sys.stderr)
        return getattr(args, "usage_error_code", Exit.ERROR)
    previous = (
        signal.signal(signal.SIGTERM, _terminated) if threading.current_thread() is threading.main_thread() else None
    )
    try:
        with _log_to_stderr(args.log_verbosity, args.log_quiet):
            return args.func(args) or 0
    except HybridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.ERROR
    except KeyboardInterrupt:
        return Exit.INTERRUPTED
    except Terminated:
        print("error: terminated (SIGTERM)", file=sys.stderr)
        return Exit.TERMINATED
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _log_to_stderr(verbosity: int, quiet: bool) -> Iterator[None]:
    """The adapter's logs on stderr for this command: warnings (retries) by default, -v info, -vv debug,
    -q errors only. Taken away when the command ends (a process may run several, as the tests do)."""
    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO)[verbosity] if verbosity < 2 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(level)
    unanswered = _Unanswered() if verbosity == 0 else None
    if unanswered is not None:
        handler.addFilter(unanswered)
    logger = logging.getLogger("adapter")
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(min(level, before) if before else level)  # an application's lower level stays
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
        if unanswered is not None and unanswered.count and not failed and not quiet:
            print(
                f"note: {unanswered.count} request{'s' * (unanswered.count != 1)} got no answer and "
                f"{'were' if unanswered.count != 1 else 'was'} asked again (-v shows each)",
                file=sys.stderr,
            )


class _Unanswered(logging.Filter):
    """Holds back the WARNING line of each request that got no answer (the client asks again, up to 8 lines
    before a cluster that is not there is named as such): the command's error says it in one line, a command
    that got through says how many were asked again; ``-v`` shows each."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.name == "adapter.requests"
            and record.levelno == logging.WARNING
            and " no answer in " in record.getMessage()
        ):
            self.count += 1
            return False
        return True


if __name__ == "__main__":
    sys.exit(main())
