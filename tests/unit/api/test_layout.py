"""The layout rules no linter has: ruff bounds a function's complexity (C90) but not its length, so this walks
adapter/ and names every function longer than 60 lines (issue 42: a function is short because it is simple)."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ADAPTER = Path(__file__).resolve().parents[3] / "adapter"
MAX_FUNCTION_LINES = 60  # from `def` (decorators excluded) to the last line, docstring included


def _long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_walk_finds_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(f"def short():\n    pass\n\n\nclass C:\n    async def long(self):\n{body}")
    assert _long_functions(tmp_path / "pkg") == [f"pkg/m.py:6 long ({MAX_FUNCTION_LINES + 1} lines)"]


def test_no_function_in_adapter_is_over_60_lines() -> None:
    long_functions = _long_functions(ADAPTER)
    assert not long_functions, "split these along their steps:\n" + "\n".join(long_functions)
