"""Assembling a node's home from Maven artifacts: OpenSearch (with k-NN and neural-search) or Elasticsearch.

Maven Central carries each distribution's integ-test zip (server and launchers; no JDK). For
OpenSearch it also carries the k-NN and neural-search plugin zips, unzipped into ``plugins/``.
OpenSearch 2.x's integ-test zip lacks the ``lang-painless`` and ``analysis-common`` modules, which
ship as bare jars, so their folders (jars + descriptor + policy) are built here; 3.x's zip already
has them (and ``reindex``, ``transport-grpc``, the Java agent), so nothing is built. Plugin
descriptors pin the exact core version, so every part of a release shares one version.

The finished home carries a manifest (``.assembled.json``: SHA-256 of every file) that
:func:`verify_home` checks before each start: a jar changed after assembly is refused.
"""

from __future__ import annotations

import json
import shutil
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from adapter.errors import ChecksumError, LocalNodeError
from adapter.local import procs
from adapter.local.artifacts import Artifact, Fetcher, pom_dependencies
from adapter.local.downloads import sha256_of
from adapter.local.releases import DEFAULT_VERSION, Release, resolve_release

__all__ = ["DEFAULT_VERSION", "MODULES", "assemble", "distribution_artifacts", "verify_home"]


@dataclass(frozen=True)
class Module:
    name: str
    artifact: str
    classname: str
    description: str
    extended_plugins: str = ""
    policy: str = ""


# Built for 2.x only. Class names read from the 2.19 jars (`unzip -l`).
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


def _release(release: Release | str) -> Release:
    return release if isinstance(release, Release) else resolve_release("opensearch", release)


def distribution_artifacts(release: Release | str) -> dict[str, Artifact]:
    """The top-level artifacts of ``release`` (a Release, or an OpenSearch version); module dependencies come from their
    POMs."""
    release = _release(release)
    group = f"org.{release.distribution.name}.distribution.integ-test-zip"
    arts = {"core": Artifact(group, release.distribution.name, release.version, "zip")}
    for folder, artifact in release.plugins:
        arts[folder] = Artifact("org.opensearch.plugin", artifact, f"{release.version}.0", "zip")
    if release.build_modules:
        for module in MODULES:
            arts[module.name] = Artifact("org.opensearch.plugin", module.artifact, release.version)
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


def _manifest(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): sha256_of(p)
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.name != ".assembled.json"
    }


def home_dir(release: Release, cache_dir: Path) -> Path:
    return cache_dir / release.name


def assemble(release: Release | str, cache_dir: Path, fetcher: Fetcher, *, log: Callable[[str], None] = print) -> Path:
    """Build ``<cache_dir>/<distribution>-<version>`` once; later calls return it (after :func:`verify_home`).

    Returns the home. The home is complete only when ``.assembled.json`` exists, so an interrupted
    assembly is redone rather than trusted.
    """
    release = _release(release)
    home = home_dir(release, cache_dir)
    marker = home / ".assembled.json"
    if marker.exists():
        if "sha256" in json.loads(marker.read_text()):
            verify_home(home)
            return home
        log(f"{home} has no file manifest (assembled by an older version of this project): assembling it again")
    downloads = cache_dir / "downloads"
    arts = distribution_artifacts(release)
    files: dict[str, Path] = {}
    for key, artifact in arts.items():
        log(f"fetching {artifact.coordinates} via {fetcher.description}")
        files[key] = fetcher.fetch(artifact, downloads)
    module_jars = _fetch_module_jars(release, arts, files, fetcher, downloads, log)

    staging = cache_dir / f".staging-{home.name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _unzip(files["core"], staging, strip_top=True)
    for folder, _ in release.plugins:
        # Unzipping is what `opensearch-plugin install` does for these two (no bin/ or config/ parts).
        _unzip(files[folder], staging / "plugins" / folder, strip_top=False)
    for module in MODULES if release.build_modules else ():
        _build_module(staging, module, release, module_jars[module.name], arts["core"])
    size = sum(f.stat().st_size for f in set(files.values()) | {j for js in module_jars.values() for j in js})
    for path in [staging, *staging.rglob("*")]:  # readable by the unprivileged user that runs the node
        path.chmod((path.stat().st_mode | (0o555 if path.is_dir() else 0o444)) & ~0o022)
    (staging / ".assembled.json").write_text(
        json.dumps(
            {
                "engine": release.distribution.name,
                "version": release.version,
                "download_bytes": size,
                "artifacts": sorted(a.coordinates for a in arts.values()),
                "sha256": _manifest(staging),
            },
            indent=2,
        )
    )
    if home.exists():  # a stale home may still serve a running node: move it aside, never delete it under one
        home.rename(cache_dir / f".old-{home.name}-{int(time.time())}")
    staging.rename(home)
    _remove_unused_old_homes(cache_dir)
    return home


def _fetch_module_jars(
    release: Release,
    arts: dict[str, Artifact],
    files: dict[str, Path],
    fetcher: Fetcher,
    downloads: Path,
    log: Callable[[str], None],
) -> dict[str, list[Path]]:
    """Each module's jars (a 2.x release builds its modules): its own, then its POM's dependencies."""
    module_jars: dict[str, list[Path]] = {}
    for module in MODULES if release.build_modules else ():
        pom = fetcher.fetch(arts[module.name].with_extension("pom"), downloads)
        jars = [files[module.name]]
        for dep in pom_dependencies(pom):
            log(f"fetching {dep.coordinates} (needed by {module.name})")
            jars.append(fetcher.fetch(dep, downloads))
        module_jars[module.name] = jars
    return module_jars


def _build_module(staging: Path, module: Module, release: Release, jars: list[Path], core: Artifact) -> None:
    """``modules/<name>``: the module's jars, its descriptor and its security policy (refused where the core zip
    already has it: that release needs no built modules)."""
    mdir = staging / "modules" / module.name
    if mdir.exists():
        raise LocalNodeError(
            f"{core.coordinates} already has modules/{module.name}; this release needs no built modules"
        )
    mdir.mkdir(parents=True)
    for jar in jars:
        shutil.copy2(jar, mdir / jar.name)
    (mdir / "plugin-descriptor.properties").write_text(_descriptor(module, release.version))
    if module.policy:
        (mdir / "plugin-security.policy").write_text(module.policy)


def _remove_unused_old_homes(cache_dir: Path) -> None:
    """Delete homes moved aside once no process runs from them."""
    old = list(cache_dir.glob(".old-*"))
    if not old:
        return
    in_use = procs.open_paths()  # a JVM keeps its jars open, and /proc shows their paths after the move
    for path in old:
        if not any(p.startswith(f"{path}/") for p in in_use):
            shutil.rmtree(path, ignore_errors=True)


def verify_home(home: Path) -> None:
    """Re-hash every file of an assembled home against its manifest (about a second for 3.x).

    Raises ChecksumError naming the first file that changed, went missing, or was added in lib/,
    modules/ or plugins/ (where the JVM would load it from).
    """
    manifest = json.loads((home / ".assembled.json").read_text())["sha256"]
    for rel, expected in manifest.items():
        path = home / rel
        if not path.is_file():
            raise ChecksumError(
                f"{path} is missing from the assembled home; delete {home} and run `hybrid local up` again"
            )
        if sha256_of(path) != expected:
            raise ChecksumError(
                f"{path} changed after it was verified and assembled; delete {home} and run `hybrid local up` again"
            )
    for sub in ("lib", "modules", "plugins", "agent"):
        for path in (home / sub).rglob("*"):
            if path.is_file() and str(path.relative_to(home)) not in manifest:
                raise ChecksumError(
                    f"{path} was added after the home was assembled; delete {home} and run `hybrid local up` again"
                )
