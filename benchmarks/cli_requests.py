"""The HTTP requests one `hybrid search` sends, as opensearch-py logs them on the wire, and the `requests`
its JSON answer says.

    OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/python benchmarks/cli_requests.py \
        --index docs "a query" [search options]

Runs the command in this process with `--json` added, prints each request (method, path and the first
query parameters) to stderr, then the count on the wire against the JSON's `requests`; exits 1 when they
differ. docs/BENCHMARKS.md ("CLI requests per search") lists what it printed.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout


def main(argv: list[str]) -> int:
    from adapter.cli import main as hybrid

    from adapter.testing import wire_log

    out = io.StringIO()
    with redirect_stdout(out), wire_log() as lines:
        code = hybrid(["search", *argv, "--json"])
    if code != 0:
        return code
    said = json.loads(out.getvalue())["requests"]
    for n, line in enumerate(lines, 1):
        method, url = line.split(" ", 2)[:2]
        path = "/" + url.split("/", 3)[-1]
        print(f"{n:>2}. {method} {path[:110]}", file=sys.stderr)
    print(f"HTTP requests: {len(lines)}; the JSON's requests: {said}", file=sys.stderr)
    return 0 if said == len(lines) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
