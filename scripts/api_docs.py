"""The API reference, from the docstrings: ``make api-docs`` -> out/api/index.html (pdoc, offline).

Documents the public API (``adapter.__all__``), the contracts, the test helpers and the framework
components. Fails (exit 1) when a module cannot be imported or pdoc warns, so CI notices a broken
reference; pdoc itself only prints such problems and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

MODULES = (
    "adapter",
    "adapter.index.contracts",
    "adapter.errors",
    "adapter.testing",
    "adapter.integrations.langchain",
    "adapter.integrations.haystack",
    "adapter.integrations.llamaindex",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--output", default="out/api", help="folder for the HTML (default %(default)s)")
    args = parser.parse_args(argv)
    import pdoc
    import pdoc.render

    pdoc.render.configure(docformat="restructuredtext", footer_text="opensearch-hybrid-adapter", search=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*MODULES, output_directory=Path(args.output))
    problems = [w for w in caught if w.filename.startswith(str(Path(pdoc.__file__).parent))]
    for w in problems:
        print(f"pdoc: {w.message}", file=sys.stderr)
    if problems:
        return 1
    print(f"API reference written to {Path(args.output) / 'index.html'} ({len(MODULES)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
