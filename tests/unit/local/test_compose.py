from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def test_compose_follows_the_local_default_with_security_plainly_disabled():
    from adapter.local import DEFAULT_VERSION

    text = (ROOT / "compose.yaml").read_text()
    data = yaml.safe_load(text)
    os_service, dashboards = data["services"]["opensearch"], data["services"]["dashboards"]
    assert os_service["image"] == f"opensearchproject/opensearch:{DEFAULT_VERSION}"
    assert dashboards["image"] == f"opensearchproject/opensearch-dashboards:{DEFAULT_VERSION}"
    assert "DISABLE_SECURITY_PLUGIN=true" in os_service["environment"]
    assert "discovery.type=single-node" in os_service["environment"]
    assert "SECURITY IS DISABLED" in text
    ports = os_service["ports"] + dashboards["ports"]
    assert ports and all(p.startswith("127.0.0.1:") for p in ports)
