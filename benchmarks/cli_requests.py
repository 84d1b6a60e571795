"""The HTTP requests one `hybrid search` sends, as opensearch-py logs them on the wire, and the `requests`
its JSON answer says.

    OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/python benchmarks/cli_requests.py --index docs "a query" [search options]

Runs the command in this process with `--json` added, prints each request (method, path and the first
query parameters) to stderr, then the count on the wire against the JSON's `requests`; exits 1 when they
differ. docs/BENCHMARKS.md ("CLI requests per search") lists what it printed.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from contextlib import redirect_stdout


class Wire(logging.Handler):
    """Each request opensearch-py logs as answered or failed (``GET http://host/path [status:200 request:0.003s]``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "[status:" in message:
            self.lines.append(message)


def main(argv: list[str]) -> int:
    from adapter.cli import main as hybrid

    wire, logger = Wire(), logging.getLogger("opensearch")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addHandler(wire)
    out = io.StringIO()
    with redirect_stdout(out):
        code = hybrid(["search", *argv, "--json"])
    if code != 0:
        return code
    said = json.loads(out.getvalue())["requests"]
    for n, line in enumerate(wire.lines, 1):
        method, url = line.split(" ", 2)[:2]
        path = "/" + url.split("/", 3)[-1]
        print(f"{n:>2}. {method} {path[:110]}", file=sys.stderr)
    print(f"HTTP requests: {len(wire.lines)}; the JSON's requests: {said}", file=sys.stderr)
    return 0 if said == len(wire.lines) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
