"""Fetching Maven artifacts for the local node: through Maven itself, or over HTTPS.

Two fetchers share one contract: ``fetch(artifact, dest_dir) -> Path`` puts the file in
``dest_dir`` (reusing a verified copy already there) and raises
:class:`~adapter.errors.ArtifactNotFoundError` naming the coordinates when the repository lacks it.

- :class:`MavenFetcher` runs ``mvn dependency:copy`` with strict checksums, so mirrors, proxies and
  credentials configured for Maven on the machine apply.
- :class:`HttpsFetcher` downloads from a Maven repository base URL (Maven Central by default) and
  verifies the file against the repository's published ``.sha512``/``.sha256``/``.sha1``.

Some artifacts are published without any checksum (neural-search 2.19.1.0's zip, as served here).
For those the project ships SHA-256 pins (``pins-<version>.json``, made by
``scripts/pin_artifacts.py``); a pinned file must match its pin as well as any published checksum.
A file with neither a published checksum nor a pin is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from adapter.errors import ArtifactNotFoundError, ChecksumError, ConfigurationError, LocalNodeError
from adapter.local.downloads import sha256_of

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


def _load_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("pins-*.json")):
        pins.update(json.loads(path.read_text())["sha256"])
    return pins


PINS = _load_pins()


def check_pin(artifact: Artifact, path: Path, *, required: bool) -> str | None:
    """Compare ``path`` with the project's SHA-256 pin; returns a note, or raises ChecksumError."""
    pin = PINS.get(artifact.coordinates)
    if pin is None:
        if required:
            raise ChecksumError(
                f"{artifact.coordinates}: the repository publishes no checksum and the project has no pin for it; "
                "refusing an unverified download (add a pin with scripts/pin_artifacts.py)"
            )
        return None
    actual = sha256_of(path)
    if actual != pin:
        raise ChecksumError(
            f"{artifact.coordinates}: sha256 is {actual}, the project's pin says {pin}; the download is corrupt or was "
            "tampered with"
        )
    return f"sha256 pin {pin}"


class Fetcher(Protocol):
    description: str

    def fetch(self, artifact: Artifact, dest_dir: Path) -> Path: ...


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _mark_verified(path: Path, note: str) -> None:
    """Record the file's SHA-256 next to how it was verified, so every later use can re-hash it."""
    _verified_marker(path).write_text(f"sha256={sha256_of(path)}; {note.strip('; ')}\n")


def reuse_verified(path: Path) -> bool:
    """True when ``path`` was verified before and still has the bytes it had then (re-hashed: cheap).

    A marker from before the hash was recorded is dropped, so the file is fetched and verified again.
    """
    marker = _verified_marker(path)
    if not (path.exists() and marker.exists()):
        return False
    recorded = marker.read_text().split(";", 1)[0]
    if not recorded.startswith("sha256="):
        marker.unlink()
        return False
    if sha256_of(path) != recorded.removeprefix("sha256="):
        raise ChecksumError(
            f"{path} changed since it was verified (sha256 differs from {marker.name}); delete both and fetch again"
        )
    return True


class HttpsFetcher:
    """Downloads from a Maven repository over HTTPS and verifies published checksums."""

    def __init__(self, base_url: str = DEFAULT_REPOSITORY, *, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.description = self.base_url

    def _open(self, url: str) -> Any:  # an http.client.HTTPResponse, or a file URL's addinfourl
        return urllib.request.urlopen(url, timeout=self.timeout)  # noqa: S310 (https or file URL by config)

    def _published_checksum(self, url: str) -> tuple[str, str] | None:
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
        return None

    def fetch(self, artifact: Artifact, dest_dir: Path) -> Path:
        dest_dir.mkdir(parents=True, exist_ok=True)
        target = dest_dir / artifact.filename
        if reuse_verified(target):
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
        published = self._published_checksum(url)
        if published is None and artifact.coordinates not in PINS:
            resp.close()
            check_pin(artifact, target, required=True)  # raises: nothing to verify against
        digest = dict(_CHECKSUMS)[published[0]]() if published else hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=dest_dir, prefix=".part-")
        try:
            with resp, os.fdopen(fd, "wb") as out:
                while chunk := resp.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            notes = []
            if published:
                algorithm, expected = published
                if digest.hexdigest() != expected:
                    raise ChecksumError(
                        f"{url}: {algorithm} is {digest.hexdigest()}, the repository says {expected}; "
                        "the download is corrupt or was tampered with"
                    )
                notes.append(f"{algorithm} {expected}")
            pinned = check_pin(artifact, Path(tmp), required=published is None)
            if pinned:
                notes.append(pinned)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _mark_verified(target, "; ".join(notes))
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
        if reuse_verified(target):
            return target
        proc = self._copy(artifact, dest_dir, strict=True)
        out = proc.stdout + proc.stderr
        lax = proc.returncode != 0 and "no checksums available" in out and artifact.coordinates in PINS
        if lax:  # published without checksums: fetch, then hold the file to the project's pin
            proc = self._copy(artifact, dest_dir, strict=False)
            out = proc.stdout + proc.stderr
        if proc.returncode != 0 or not target.exists():
            if any(m in out for m in ("Unable to find artifact", "Could not find artifact", "was not found in")):
                raise ArtifactNotFoundError(artifact.coordinates, self.description)
            if "no checksums available" in out:
                check_pin(artifact, target, required=True)
            tail = "\n".join(out.strip().splitlines()[-15:])
            raise LocalNodeError(f"mvn failed to fetch {artifact.coordinates} (exit {proc.returncode}):\n{tail}")
        pinned = check_pin(artifact, target, required=lax)
        _mark_verified(
            target, ("verified by mvn --strict-checksums" if not lax else "") + (f"; {pinned}" if pinned else "")
        )
        return target

    def _copy(self, artifact: Artifact, dest_dir: Path, *, strict: bool) -> subprocess.CompletedProcess[str]:
        cmd = [
            # -U retries artifacts whose earlier absence Maven cached.
            self.mvn,
            "-B",
            "-q",
            "-U",
            "--strict-checksums" if strict else "--lax-checksums",
            "dependency:copy",
            f"-Dartifact={artifact.coordinates}",
            f"-DoutputDirectory={dest_dir}",
            "-Dmdep.overWriteReleases=true",
            "-Dtransitive=false",
        ]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=dest_dir)


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
