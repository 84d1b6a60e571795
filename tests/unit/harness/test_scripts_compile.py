"""Every script and benchmark compiles: nothing imports most of them in a test, so an error the compiler finds
(a name used before its `global` declaration) would otherwise wait for the next person who runs one."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted([*ROOT.glob("scripts/*.py"), *ROOT.glob("benchmarks/**/*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_it_compiles(path: Path) -> None:
    compile(path.read_text(encoding="utf-8"), str(path), "exec")
