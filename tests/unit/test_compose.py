from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_runs_opensearch_2_19_with_security_plainly_disabled():
    text = (ROOT / "compose.yaml").read_text()
    data = yaml.safe_load(text)
    os_service, dashboards = data["services"]["opensearch"], data["services"]["dashboards"]
    assert os_service["image"].startswith("opensearchproject/opensearch:2.19.")
    assert dashboards["image"].startswith("opensearchproject/opensearch-dashboards:2.19.")
    assert "DISABLE_SECURITY_PLUGIN=true" in os_service["environment"]
    assert "discovery.type=single-node" in os_service["environment"]
    assert "SECURITY IS DISABLED" in text
    assert all(p.startswith("127.0.0.1:") for p in os_service["ports"] + dashboards["ports"])
