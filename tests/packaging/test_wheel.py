"""The wheel carries the JSON assets, and an installed copy renders them."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_contains_the_assets(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("opensearch_hybrid_adapter-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind in ("mappings", "pipelines"):
        for asset in (ROOT / kind).glob("*.json"):
            assert f"adapter/_assets/{kind}/{asset.name}" in names, asset
    assert "adapter/data/support_es.jsonl" in names
    for schema in ("search", "eval", "spec"):  # the versioned contracts (adapter.index.contracts)
        assert f"adapter/schemas/{schema}.schema.json" in names
    assert "adapter/py.typed" in names
    # The pages work offline from an installed wheel: templates, scripts, and the vendored chart library with its
    # licence.
    for page in (
        "templates/report.html.j2",
        "templates/compare.html.j2",
        "static/dom.js",
        "static/report.js",
        "static/labels.js",
        "static/compare.js",
        "static/vendor/chart.umd.min.js",
        "static/vendor/chart.js-LICENSE.md",
    ):
        assert f"adapter/web/{page}" in names, page
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    # The core is light: no model stack (torch comes only with the models extra); PyYAML reads spec files; orjson writes
    # vectors and JSON (issue 37).
    assert sorted(r.split(">")[0].split("<")[0].split("=")[0].strip() for r in core) == [
        "numpy",
        "opensearch-py",
        "orjson",
        "pyyaml",
        "rich",
    ]
    assert any(r.startswith("sentence-transformers") and "extra == 'models'" in r for r in requires)
    assert "Classifier: Typing :: Typed" in metadata and "License-Expression: Apache-2.0" in metadata

    # Installed apart from the source tree, the package finds and renders its own assets.
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True,
    )
    code = (
        "import adapter.index.assets as a, json; from adapter.engines.opensearch import OPENSEARCH; from adapter "
        "import RRF;from adapter.engines.opensearch.capabilities import opensearch_capabilities;"
        "assert '_assets' in str(a._asset_root('pipelines'));"
        "from adapter.index.contracts import schema; assert schema('eval')['title'];"
        "print(json.dumps(OPENSEARCH.render_pipeline(RRF(20), opensearch_capabilities('3.6.0'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(target)}
    )
    assert out.returncode == 0, out.stderr
    assert '"rank_constant": 20' in out.stdout
