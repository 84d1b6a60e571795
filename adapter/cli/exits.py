"""Every exit code of the ``hybrid`` command line, in one table (the README prints the same table,
and ``tests/unit/cli/test_exit_codes.py`` holds the two equal).

A script can tell from the code alone whether every row landed (``ingest``), whether the cluster
drifted from its spec (``diff``), or whether the command was stopped (130, 143).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    FOUND = 1  # `check`: vectors another model wrote; `diff`: an error (2 there means drift)
    ERROR = 2  # an error stopped the command (bad arguments, cluster unreachable or refusing, ...)
    INCOMPLETE = 3  # `ingest` finished but some rows did not land; `local status`: not running
    INTERRUPTED = 130  # Ctrl-C (SIGINT)
    TERMINATED = 143  # SIGTERM (timeout, kill, a service manager): cleanup ran, see the message


@dataclass(frozen=True)
class ExitCode:
    code: int
    commands: str  # the commands it applies to, as the README names them
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(Exit.OK, "every command", "done"),
    ExitCode(Exit.OK, "`ingest`", "every row landed"),
    ExitCode(Exit.OK, "`diff`", "the cluster matches the spec"),
    ExitCode(
        Exit.ERROR,
        "every command but `diff`",
        "an error stopped it: bad arguments, cluster unreachable or lost, a refusal (401, 403, a flood-stage disk "
        "block), a migration's gate or check. `ingest` lists the rows not confirmed written in its failures file: "
        "the same command run again completes them",
    ),
    ExitCode(
        Exit.INCOMPLETE,
        "`ingest`",
        "the ingest finished, but some rows did not land (bad input, a row over the size limit, a row the cluster "
        "refused, e.g. under a migration's write block or into a closed index): each is in the failures file with "
        "its line and reason",
    ),
    ExitCode(Exit.FOUND, "`check`", "some sampled vectors were not written by the index's embedder"),
    ExitCode(Exit.FOUND, "`diff`", "an error (bad arguments or spec, cluster unreachable): never read as drift"),
    ExitCode(Exit.ERROR, "`diff`", "drift: the cluster differs from the spec (the diff says how)"),
    ExitCode(Exit.INCOMPLETE, "`local status`", "no local cluster is running"),
    ExitCode(Exit.INCOMPLETE, "`get`", "some ids were not found (each is named on stderr; the others were printed)"),
    ExitCode(
        Exit.INCOMPLETE,
        "`judgments export`",
        "written, but `--drop-refused` left out queries the Search Relevance Workbench refuses (each one named)",
    ),
    ExitCode(Exit.INTERRUPTED, "every command", "interrupted (Ctrl-C)"),
    ExitCode(
        Exit.TERMINATED,
        "every command",
        "terminated (SIGTERM); a migration says whether its swap happened, and the live index takes writes",
    ),
)


def _applies(entry: ExitCode, command: str) -> bool:
    return entry.commands in (f"`{command}`", "every command") or (
        entry.commands == "every command but `diff`" and command != "diff"
    )


def help_epilog(command: str) -> str:
    """The ``exit codes:`` section of one command's ``--help`` (its own meaning of a code before the general one)."""
    import textwrap

    rows: dict[int, str] = {}
    for entry in sorted((e for e in EXIT_CODES if _applies(e, command)), key=lambda e: e.commands.startswith("every")):
        rows.setdefault(int(entry.code), entry.meaning)
    lines = ["exit codes:"]
    for code, meaning in sorted(rows.items()):
        wrapped = textwrap.wrap(meaning, 92)
        lines += [f"  {code:<3}  {wrapped[0]}", *(f"       {more}" for more in wrapped[1:])]
    return "\n".join(lines) + "\n"


def add_with_exit_codes(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str, *, command: str | None = None
) -> argparse.ArgumentParser:
    """The sub-command ``name``, its ``--help`` ending with its exit codes (:func:`help_epilog`, laid out as
    written). ``command``: its name in the table where that is not ``name`` (``judgments export``)."""
    return sub.add_parser(
        name, help=help, epilog=help_epilog(command or name), formatter_class=argparse.RawDescriptionHelpFormatter
    )
