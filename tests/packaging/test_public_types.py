"""What a user's strict type checker sees of the public API (the package ships py.typed).

mypy --strict on a user's module: every name of ``adapter.__all__`` imports (the lazy ones too),
``connect`` returns an ``OpenSearch`` client, ``Searcher.search`` returns a ``SearchResult``, and a misspelt technique
is a type error.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import adapter
from tests.conftest import ROOT


def test_the_public_api_under_a_user_s_strict_checker(tmp_path: Path):
    names = ", ".join(n for n in adapter.__all__ if n != "__version__")
    module = tmp_path / "user_code.py"
    module.write_text(
        f"from adapter import __version__, {names}\n"
        "from opensearchpy import OpenSearch\n\n\n"
        "def client() -> OpenSearch:  # was Any: 'Returning Any from function declared to return'\n"
        "    return connect('http://localhost:9200')\n\n\n"
        "def first(searcher: Searcher) -> SearchResult:\n"
        "    return searcher.search('q', technique='hybrid')\n\n\n"
        "def misspelt(searcher: Searcher) -> SearchResult:\n"
        "    return searcher.search('q', technique='hybird')\n"
    )
    # The user's own settings, not the project's (--strict, no config file); a cache of its own
    # that outlives the test, so that only the first run checks numpy and the rest from scratch.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            "/dev/null",
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "public-api"),
            str(module),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    # Before: 47 errors, "Module "adapter" does not explicitly export attribute ..." for each lazy name.
    assert len(errors) == 1, proc.stdout
    assert errors[0].startswith(
        'user_code.py:14: error: Argument "technique" to "search" of "Searcher" has incompatible type '
        "\"Literal['hybird']\""
    )
