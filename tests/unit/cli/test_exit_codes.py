"""Issue 20 item 11: OPERATIONS.md said rows refused under the write block end with exit 2; it was 3.
One table of exit codes (adapter/cli/exits.py) is what the commands return, what their --help says
and what the README prints; the docs' other mentions of an ingest's exit code agree with it."""

import re
from pathlib import Path

from adapter.cli import build_parser
from adapter.cli.exits import EXIT_CODES, Exit, help_epilog

ROOT = Path(__file__).resolve().parents[3]


def readme_table() -> list[tuple[str, str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text[text.index("## Exit codes") :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| code"))
    out = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        code, command, meaning = (cell.strip() for cell in line.strip().strip("|").split(" | "))
        out.append((code, command, meaning))
    return out


def test_the_readme_prints_the_table_the_code_has():
    assert readme_table() == [(str(int(e.code)), e.commands, e.meaning) for e in EXIT_CODES]


def test_the_commands_return_the_codes_of_the_table():
    from adapter.cli import ingest, ops

    assert (ingest.EXIT_ALL_LANDED, ingest.EXIT_ERROR, ingest.EXIT_SOME_ROWS_FAILED) == (0, 2, 3)
    assert (ops.DIFF_IN_SYNC, ops.DIFF_ERROR, ops.DIFF_DRIFT) == (0, 1, 2)
    assert {int(e) for e in Exit} == {int(e.code) for e in EXIT_CODES}


def test_each_commands_help_ends_with_its_rows():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in ("ingest", "diff", "check"):
        assert help_epilog(name) in sub.choices[name].format_help()
    assert "  3    the ingest finished" in help_epilog("ingest") and "  2    drift" in help_epilog("diff")


def test_the_docs_say_what_exit_code_an_ingest_ends_with_as_the_table_does():
    claims = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"(write block|refused|did not land)[^.]{0,160}?exit (\d+)", text):
            claims.append((path.name, m.group(0)[-60:], int(m.group(2))))
    wrong = [c for c in claims if c[2] != Exit.INCOMPLETE]
    assert claims and not wrong, wrong
