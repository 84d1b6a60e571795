"""A 2.x home assembled with its built modules, pinned whole (issue 42: assemble split into named steps): the fetch log,
every file of the home with its bytes' hash, the modules' jars, descriptors and policy, and the marker's fields."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from adapter.local.distribution import assemble, distribution_artifacts
from adapter.local.releases import resolve_release
from tests.support.artifacts import FilesFetcher

pytestmark = pytest.mark.unit

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><dependencies>{}</dependencies></project>"""
DEP = "<dependency><groupId>org.antlr</groupId><artifactId>{}</artifactId><version>4.13</version></dependency>"


def _files(tmp_path, release):
    arts = distribution_artifacts(release)
    files = {}
    for key, art in arts.items():
        path = tmp_path / f"{key}.{art.extension}"
        if art.extension == "zip":
            with zipfile.ZipFile(path, "w") as zf:
                top = f"opensearch-{release.version}/" if key == "core" else ""
                zf.writestr(f"{top}lib/{key}.jar", f"{key} bytes")
                zf.writestr(f"{top}bin/{key}", "#!/bin/sh\n")
        else:
            path.write_bytes(f"{key} jar".encode())
        files[art.coordinates] = path
        pom = tmp_path / f"{key}.pom"
        deps = DEP.format("antlr4-runtime") + DEP.format("asm") if key == "lang-painless" else ""
        pom.write_text(POM.format(deps))
        files[art.with_extension("pom").coordinates] = pom
    for name in ("antlr4-runtime", "asm"):
        jar = tmp_path / f"{name}-4.13.jar"
        jar.write_bytes(name.encode())
        files[f"org.antlr:{name}:4.13:jar"] = jar
    return files


def test_a_home_with_built_modules_is_pinned(tmp_path):
    release = resolve_release("opensearch", "2.19.1")
    assert release.build_modules
    logged = []
    home = assemble(release, tmp_path / "cache", FilesFetcher(_files(tmp_path, release)), log=logged.append)
    assert home == tmp_path / "cache" / "opensearch-2.19.1"
    assert logged == [
        "fetching org.opensearch.distribution.integ-test-zip:opensearch:2.19.1:zip via a test folder",
        "fetching org.opensearch.plugin:opensearch-knn:2.19.1.0:zip via a test folder",
        "fetching org.opensearch.plugin:neural-search:2.19.1.0:zip via a test folder",
        "fetching org.opensearch.plugin:lang-painless:2.19.1:jar via a test folder",
        "fetching org.opensearch.plugin:analysis-common:2.19.1:jar via a test folder",
        "fetching org.antlr:antlr4-runtime:4.13:jar (needed by lang-painless)",
        "fetching org.antlr:asm:4.13:jar (needed by lang-painless)",
    ]
    marker = json.loads((home / ".assembled.json").read_text())
    content = {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()[:12]
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.name != ".assembled.json"
    }
    assert marker["sha256"].keys() == content.keys()
    assert sorted(content) == [
        "bin/core",
        "lib/core.jar",
        "modules/analysis-common/analysis-common.jar",
        "modules/analysis-common/plugin-descriptor.properties",
        "modules/lang-painless/antlr4-runtime-4.13.jar",
        "modules/lang-painless/asm-4.13.jar",
        "modules/lang-painless/lang-painless.jar",
        "modules/lang-painless/plugin-descriptor.properties",
        "modules/lang-painless/plugin-security.policy",
        "plugins/opensearch-knn/bin/opensearch-knn",
        "plugins/opensearch-knn/lib/opensearch-knn.jar",
        "plugins/opensearch-neural-search/bin/opensearch-neural-search",
        "plugins/opensearch-neural-search/lib/opensearch-neural-search.jar",
    ]
    descriptor = (home / "modules/analysis-common/plugin-descriptor.properties").read_text()
    assert "name=analysis-common\n" in descriptor and "extended.plugins=lang-painless" in descriptor
    assert (
        'permission java.lang.RuntimePermission "createClassLoader";'
        in (home / "modules/lang-painless/plugin-security.policy").read_text()
    )
    assert {k: v for k, v in marker.items() if k != "sha256"} == {
        "engine": "opensearch",
        "version": "2.19.1",
        "download_bytes": MEASURED_BYTES,
        "artifacts": sorted(a.coordinates for a in distribution_artifacts(release).values()),
    }
    assert hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest() == PINNED


MEASURED_BYTES = 977  # the fetched files: the three zips, the two module jars and the two dependencies
# The home's files and the sha256 of each, measured before the split.
PINNED = "3bbbc39fb07be48225b3a48d4ef173891e0d6359bd2bf78cbd0fdb9890e9fa16"
