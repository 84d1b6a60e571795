"""Finding a Java runtime that the requested OpenSearch version can run on."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import JavaError

# OpenSearch 2.x installs a security manager, which Java 24 removed; 2.19 is tested on 11/17/21.
SUPPORTED = {2: (11, 21), 3: (21, 25)}


@dataclass(frozen=True)
class Java:
    home: Path
    major: int

    @property
    def binary(self) -> Path:
        return self.home / "bin" / "java"


def supported_range(opensearch_version: str) -> tuple[int, int]:
    major = int(opensearch_version.split(".")[0])
    if major not in SUPPORTED:
        raise JavaError(f"no known Java range for OpenSearch {opensearch_version}")
    return SUPPORTED[major]


def java_major(home: Path) -> int:
    """The Java feature version of the JDK/JRE at ``home`` (from its ``release`` file or ``java -version``)."""
    release = home / "release"
    text = ""
    if release.is_file():
        match = re.search(r'JAVA_VERSION="([^"]+)"', release.read_text(errors="replace"))
        text = match.group(1) if match else ""
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
    return int(parts[1]) if parts[0] == "1" else int(re.match(r"\d+", parts[0]).group())


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


def find_java(opensearch_version: str, explicit: str | os.PathLike | None = None) -> Java:
    """Pick the Java to run ``opensearch_version`` with.

    An explicit home (argument, ``HYBRID_JAVA_HOME`` or ``JAVA_HOME``) is used as given and rejected
    if its version does not fit; only when none is set are the machine's JDKs searched.
    """
    low, high = supported_range(opensearch_version)
    wanted = f"Java {low}-{high}"
    for source, value in (
        ("argument", explicit),
        ("HYBRID_JAVA_HOME", os.environ.get("HYBRID_JAVA_HOME")),
        ("JAVA_HOME", os.environ.get("JAVA_HOME")),
    ):
        if value:
            home = Path(value)
            major = java_major(home)
            if not low <= major <= high:
                raise JavaError(
                    f"{source} points to Java {major} ({home}); OpenSearch {opensearch_version} needs {wanted}. "
                    f"Set HYBRID_JAVA_HOME to a JDK {low}-{high}"
                    + (" (2.x relies on the security manager that Java 24 removed)" if major >= 24 else "")
                )
            return Java(home, major)
    seen = []
    for home in _candidates():
        try:
            major = java_major(home)
        except JavaError:
            continue
        seen.append(f"{home} (Java {major})")
        if low <= major <= high:
            return Java(home, major)
    if not seen:
        raise JavaError(f"no Java found; OpenSearch {opensearch_version} needs {wanted}. Install e.g. openjdk-17-jre-headless")
    raise JavaError(f"OpenSearch {opensearch_version} needs {wanted}; found only: " + ", ".join(seen))
