"""``hybrid schema NAME``: print the JSON Schema of one of the adapter's documents (adapter.index.contracts)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parsers(sub: Any) -> None:  # argparse's _SubParsersAction
    from adapter.index.contracts import Contract

    schema = sub.add_parser("schema", help="print the JSON Schema of search --json, eval --json or the spec file")
    schema.add_argument("name", choices=[c.value for c in Contract])
    schema.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from adapter.index.contracts import schema

    print(json.dumps(schema(args.name), indent=2, ensure_ascii=False))
    return 0
