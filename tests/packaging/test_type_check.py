"""`make test`'s first step, the type check, fails on a type error and prints where it is.

The step is the one `make test` runs (scripts/test_targets.py's ``type_check``), with the project's
own mypy configuration; here it is pointed at a tiny module instead of adapter/.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import ROOT


# No cache for the tiny modules: mypy reuses a cached module's errors by its name, with the path of
# the run that cached them (another tmp_path).
NO_CACHE = ("--cache-dir=/dev/null",)


def _step():  # scripts/ is not a package: the script loaded as `make test` runs it
    spec = importlib.util.spec_from_file_location("test_targets", ROOT / "scripts" / "test_targets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_test_runs_the_type_check_first(tmp_path: Path, capfd, monkeypatch):
    script = _step()
    ran: list[str] = []
    monkeypatch.setattr(script, "type_check", lambda: (ran.append("type check"), ("type check", 1, 0.0))[1])
    monkeypatch.setattr(script, "_pytest", lambda args, env, label: (ran.append(label), (label, 0, 0.0))[1])
    monkeypatch.setenv("HYBRID_TEST_TARGETS", "opensearch-3.6.0")
    monkeypatch.delenv("OPENSEARCH_URL", raising=False)
    assert script.main([]) == 1  # every tier passed, the type check did not: the run fails
    assert ran == ["type check", "unit and packaging tiers", "integration tier on opensearch-3.6.0"]
    assert "type check: FAILED (exit 1)" in capfd.readouterr().out


def test_the_type_check_fails_on_a_type_error_and_names_it(tmp_path: Path, capfd):
    bad = tmp_path / "bad.py"
    bad.write_text("def size(text: str) -> int:\n    return text\n")
    label, rc, _ = _step().type_check([str(bad)], NO_CACHE)
    out = capfd.readouterr().out
    assert (label, rc) == ("type check", 1)
    assert f"{bad}:2: error: Incompatible return value type" in out


def test_the_type_check_is_strict(tmp_path: Path, capfd):
    """An unannotated function passes plain mypy; the project's configuration (--strict) refuses it."""
    untyped = tmp_path / "untyped.py"
    untyped.write_text("def size(text):\n    return len(text)\n")
    _, rc, _ = _step().type_check([str(untyped)], NO_CACHE)
    assert rc == 1
    assert "Function is missing a type annotation  [no-untyped-def]" in capfd.readouterr().out


def test_the_type_check_passes_a_typed_module(tmp_path: Path, capfd):
    good = tmp_path / "good.py"
    good.write_text("def size(text: str) -> int:\n    return len(text)\n")
    _, rc, _ = _step().type_check([str(good)], NO_CACHE)
    assert rc == 0, capfd.readouterr().out
