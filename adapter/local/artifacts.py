"""Fetching Maven artifacts for the local node: through Maven itself, or over HTTPS.

Two fetchers share one contract: ``fetch(artifact, dest_dir) -> Path`` puts the file in
``dest_dir`` (reusing a verified copy already there) and raises
:class:`~adapter.errors.ArtifactNotFoundError` naming the coordinates when the repository lacks it.

- :class:`MavenFetcher` runs ``mvn dependency:copy`` with strict checksums, so mirrors, proxies and
  credentials configured for Maven on the machine apply.
- :class:`HttpsFetcher` downloads from a Maven repository base URL (Maven Central by default) and
  verifies the file against the repository's published ``.sha512``/``.sha256``/``.sha1``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import ArtifactNotFoundError, ChecksumError, ConfigurationError, LocalNodeError

DEFAULT_REPOSITORY = "https://repo1.maven.org/maven2"
_CHECKSUMS = (("sha512", hashlib.sha512), ("sha256", hashlib.sha256), ("sha1", hashlib.sha1))


@dataclass(frozen=True)
class Artifact:
    group: str
    artifact: str
    version: str
    extension: str = "jar"

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}:{self.extension}"

    @property
    def filename(self) -> str:
        return f"{self.artifact}-{self.version}.{self.extension}"

    @property
    def path(self) -> str:
        """Path of the file inside a Maven repository layout."""
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.filename}"

    def with_extension(self, extension: str) -> Artifact:
        return Artifact(self.group, self.artifact, self.version, extension)


class Fetcher(Protocol):
    description: str

    def fetch(self, artifact: Artifact, dest_dir: Path) -> Path: ...


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


class HttpsFetcher:
    """Downloads from a Maven repository over HTTPS and verifies published checksums."""

    def __init__(self, base_url: str = DEFAULT_REPOSITORY, *, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.description = self.base_url

    def _open(self, url: str):
        return urllib.request.urlopen(url, timeout=self.timeout)  # noqa: S310 (https or file URL by config)

    def _published_checksum(self, url: str) -> tuple[str, str]:
        for name, _ in _CHECKSUMS:
            try:
                with self._open(f"{url}.{name}") as resp:
                    text = resp.read().decode("ascii", "replace").strip()
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    continue
                raise LocalNodeError(f"fetching {url}.{name} failed: HTTP {exc.code}") from exc
            except OSError as exc:
                raise LocalNodeError(f"cannot reach {self.base_url}: {exc}") from exc
            if text:
                return name, text.split()[0].lower()
        raise ChecksumError(f"{url} has no published .sha512/.sha256/.sha1 checksum; refusing an unverified download")

    def fetch(self, artifact: Artifact, dest_dir: Path) -> Path:
        dest_dir.mkdir(parents=True, exist_ok=True)
        target = dest_dir / artifact.filename
        if target.exists() and _verified_marker(target).exists():
            return target
        url = f"{self.base_url}/{artifact.path}"
        try:
            resp = self._open(url)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise ArtifactNotFoundError(artifact.coordinates, self.base_url) from exc
            raise LocalNodeError(f"downloading {url} failed: HTTP {exc.code}") from exc
        except OSError as exc:
            raise LocalNodeError(f"cannot reach {self.base_url}: {exc}") from exc
        algorithm, expected = self._published_checksum(url)
        digest = dict(_CHECKSUMS)[algorithm]()
        fd, tmp = tempfile.mkstemp(dir=dest_dir, prefix=".part-")
        try:
            with resp, os.fdopen(fd, "wb") as out:
                while chunk := resp.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected:
                raise ChecksumError(
                    f"{url}: {algorithm} is {digest.hexdigest()}, the repository says {expected}; "
                    "the download is corrupt or was tampered with"
                )
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _verified_marker(target).write_text(f"{algorithm} {expected}\n")
        return target


class MavenFetcher:
    """Fetches through the machine's Maven (its mirrors, proxies and credentials), strict checksums."""

    def __init__(self, mvn: str = "mvn") -> None:
        path = shutil.which(mvn)
        if path is None:
            raise ConfigurationError(f"Maven ({mvn!r}) is not on PATH; use the HTTPS fetcher instead")
        self.mvn = path
        self.description = "Maven as configured on this machine"

    def fetch(self, artifact: Artifact, dest_dir: Path) -> Path:
        dest_dir.mkdir(parents=True, exist_ok=True)
        target = dest_dir / artifact.filename
        if target.exists() and _verified_marker(target).exists():
            return target
        cmd = [
            # -U retries artifacts whose earlier absence Maven cached.
            self.mvn, "-B", "-q", "-U", "--strict-checksums", "dependency:copy",
            f"-Dartifact={artifact.coordinates}", f"-DoutputDirectory={dest_dir}",
            "-Dmdep.overWriteReleases=true", "-Dtransitive=false",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=dest_dir)
        if proc.returncode != 0 or not target.exists():
            out = proc.stdout + proc.stderr
            if any(m in out for m in ("Unable to find artifact", "Could not find artifact", "was not found in")):
                raise ArtifactNotFoundError(artifact.coordinates, self.description)
            tail = "\n".join(out.strip().splitlines()[-15:])
            raise LocalNodeError(f"mvn failed to fetch {artifact.coordinates} (exit {proc.returncode}):\n{tail}")
        _verified_marker(target).write_text("verified by mvn --strict-checksums\n")
        return target


def make_fetcher(kind: str = "auto", *, repository: str | None = None) -> Fetcher:
    """``auto`` uses Maven when it is on PATH and no repository URL was given, else HTTPS."""
    repository = repository or os.environ.get("HYBRID_MAVEN_REPOSITORY")
    if kind == "maven" or (kind == "auto" and repository is None and shutil.which("mvn")):
        return MavenFetcher()
    if kind in ("auto", "https"):
        return HttpsFetcher(repository or DEFAULT_REPOSITORY)
    raise ConfigurationError(f"unknown fetcher {kind!r}; expected 'auto', 'maven' or 'https'")


def pom_dependencies(pom_file: Path) -> list[Artifact]:
    """Compile/runtime dependencies declared in a POM (how a module's jars are found)."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(pom_file).getroot()
    deps = []
    for dep in root.findall("m:dependencies/m:dependency", ns):
        scope = dep.findtext("m:scope", "compile", ns)
        if scope not in ("compile", "runtime"):
            continue
        deps.append(
            Artifact(
                dep.findtext("m:groupId", "", ns),
                dep.findtext("m:artifactId", "", ns),
                dep.findtext("m:version", "", ns),
            )
        )
    return deps
