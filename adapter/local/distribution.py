"""Assembling an OpenSearch home with k-NN and neural-search from Maven artifacts.

Maven Central carries the integ-test distribution (server, launchers, ``transport-netty4``; no JDK),
the k-NN and neural-search plugin zips, and the ``lang-painless`` and ``analysis-common`` module
jars. The modules ship as bare jars, so their folders (jars + descriptor + policy) are built here.
Plugin descriptors pin the exact core version, so every part shares one version.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import LocalNodeError
from .artifacts import Artifact, Fetcher, pom_dependencies

DEFAULT_VERSION = "2.19.1"


@dataclass(frozen=True)
class Module:
    name: str
    artifact: str
    classname: str
    description: str
    extended_plugins: str = ""
    policy: str = ""


# Class names read from the 2.19 jars (`unzip -l`).
MODULES = (
    Module(
        "lang-painless",
        "lang-painless",
        "org.opensearch.painless.PainlessPlugin",
        "An easy, safe and fast scripting language for OpenSearch",
        policy=(
            "grant {\n"
            '  permission java.lang.RuntimePermission "createClassLoader";\n'
            '  permission java.lang.RuntimePermission "getClassLoader";\n'
            "};\n"
        ),
    ),
    Module(
        "analysis-common",
        "analysis-common",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "Adds common analysis capabilities (language analyzers, asciifolding, stemmers)",
        extended_plugins="lang-painless",
    ),
)

# (folder under plugins/, Maven artifactId)
PLUGINS = (("opensearch-knn", "opensearch-knn"), ("opensearch-neural-search", "neural-search"))


def distribution_artifacts(version: str) -> dict[str, Artifact]:
    """The top-level artifacts of a node of ``version`` (module dependencies come from their POMs)."""
    arts = {"core": Artifact("org.opensearch.distribution.integ-test-zip", "opensearch", version, "zip")}
    for folder, artifact in PLUGINS:
        arts[folder] = Artifact("org.opensearch.plugin", artifact, f"{version}.0", "zip")
    for module in MODULES:
        arts[module.name] = Artifact("org.opensearch.plugin", module.artifact, version)
    return arts


def _descriptor(module: Module, version: str) -> str:
    return (
        f"description={module.description}\n"
        f"version={version}\n"
        f"name={module.name}\n"
        f"classname={module.classname}\n"
        "java.version=11\n"
        f"opensearch.version={version}\n"
        f"extended.plugins={module.extended_plugins}\n"
        "has.native.controller=false\n"
    )


def _unzip(archive: Path, dest: Path, strip_top: bool) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            name = info.filename
            if strip_top:
                name = name.split("/", 1)[1] if "/" in name else ""
            if not name:
                continue
            target = dest / name
            if not str(target.resolve()).startswith(str(dest.resolve())):
                raise LocalNodeError(f"{archive} contains an unsafe path {info.filename!r}")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                target.chmod(mode)


def assemble(version: str, cache_dir: Path, fetcher: Fetcher, *, log=print) -> Path:
    """Build ``<cache_dir>/opensearch-<version>`` once; later calls return it untouched.

    Returns the home. The home is complete only when ``.assembled.json`` exists, so an interrupted
    assembly is redone rather than trusted.
    """
    home = cache_dir / f"opensearch-{version}"
    marker = home / ".assembled.json"
    if marker.exists():
        return home
    downloads = cache_dir / "downloads"
    arts = distribution_artifacts(version)
    files: dict[str, Path] = {}
    for key, artifact in arts.items():
        log(f"fetching {artifact.coordinates} via {fetcher.description}")
        files[key] = fetcher.fetch(artifact, downloads)
    module_jars: dict[str, list[Path]] = {}
    for module in MODULES:
        pom = fetcher.fetch(arts[module.name].with_extension("pom"), downloads)
        jars = [files[module.name]]
        for dep in pom_dependencies(pom):
            log(f"fetching {dep.coordinates} (needed by {module.name})")
            jars.append(fetcher.fetch(dep, downloads))
        module_jars[module.name] = jars

    staging = cache_dir / f".staging-opensearch-{version}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _unzip(files["core"], staging, strip_top=True)
    for folder, _ in PLUGINS:
        _unzip(files[folder], staging / "plugins" / folder, strip_top=False)
    for module in MODULES:
        mdir = staging / "modules" / module.name
        mdir.mkdir(parents=True)
        for jar in module_jars[module.name]:
            shutil.copy2(jar, mdir / jar.name)
        (mdir / "plugin-descriptor.properties").write_text(_descriptor(module, version))
        if module.policy:
            (mdir / "plugin-security.policy").write_text(module.policy)
    size = sum(f.stat().st_size for f in set(files.values()) | {j for js in module_jars.values() for j in js})
    (staging / ".assembled.json").write_text(
        json.dumps({"version": version, "download_bytes": size, "artifacts": sorted(a.coordinates for a in arts.values())}, indent=2)
    )
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    for path in [home, *home.rglob("*")]:  # readable by the unprivileged user that runs the node
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    return home
