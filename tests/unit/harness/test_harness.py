"""The harness's own rules, run on a throwaway test tree with this project's conftest: markers
deselect what a target cannot serve, and a declared test skipped on its target fails."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"

TESTS = """
import pytest

def test_plain_opensearch():
    pass

@pytest.mark.min_version("3.0")
def test_three_only():
    pass

@pytest.mark.max_version("2")
def test_two_only():
    pass

@pytest.mark.engine("elasticsearch")
def test_es_only():
    pass

@pytest.mark.local_node
def test_needs_local_node():
    pass

@pytest.mark.min_version("3.0")
def test_three_feature_skipped():
    pytest.skip("feature missing")
"""


def _run(tmp_path: Path, **env: str) -> str:
    tests = tmp_path / "tests"
    (tests / "integration").mkdir(parents=True, exist_ok=True)
    shutil.copy(CONFTEST, tests / "conftest.py")
    (tests / "integration" / "test_rules.py").write_text(TESTS)
    run_env = {k: v for k, v in os.environ.items() if k not in ("OPENSEARCH_URL", "HYBRID_TEST_TARGET")}
    run_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "integration", "-v", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.stdout + proc.stderr


def test_a_3_x_target_runs_3_x_tests_and_fails_a_declared_test_that_skips(tmp_path):
    out = _run(tmp_path, HYBRID_TEST_TARGET="opensearch-3.6.0")
    assert (
        "test_three_only PASSED" in out
        and "test_plain_opensearch PASSED" in out
        and "test_needs_local_node PASSED" in out
    )
    assert "test_three_feature_skipped FAILED" in out and "which its markers say supports it" in out
    assert "1 failed, 3 passed, 2 deselected" in out  # test_two_only and test_es_only


def test_a_2_x_target_deselects_3_x_and_elasticsearch_tests(tmp_path):
    out = _run(tmp_path, HYBRID_TEST_TARGET="opensearch-2.19.1")
    assert "test_two_only PASSED" in out and "test_plain_opensearch PASSED" in out
    assert "test_three_only" not in out and "test_es_only" not in out and "test_three_feature_skipped" not in out
    assert "3 deselected" in out


def test_the_elasticsearch_target_runs_only_elasticsearch_tests(tmp_path):
    out = _run(tmp_path, HYBRID_TEST_TARGET="elasticsearch-9.2.4")
    assert "test_es_only PASSED" in out and "1 passed, 5 deselected" in out


def test_a_cluster_given_by_url_is_probed_and_local_node_tests_are_deselected(tmp_path):
    import http.server
    import json
    import threading

    class OpenSearchRoot(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"version": {"distribution": "opensearch", "number": "3.6.0"}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OpenSearchRoot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = _run(tmp_path, OPENSEARCH_URL=f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    assert "test_three_only PASSED" in out and "test_needs_local_node" not in out
    assert "1 failed, 2 passed, 3 deselected" in out


WHERE = """
import os

def test_where_nodes_and_artifacts_live():
    from adapter.local import LocalNode, NodeConfig
    node = LocalNode(NodeConfig(), log=lambda m: None)
    print(f"\\nCACHE={node.cache_dir}\\nARTIFACTS={node.artifacts_dir}\\nENV={os.environ['HYBRID_CACHE_DIR']}")
"""


def test_the_tests_run_nodes_from_a_cache_folder_of_their_own_that_shares_the_downloads(tmp_path):
    """Issue 20 item 16: `make test` reused the node `hybrid demo` had started in the user's cache folder.
    The session's nodes (and any LocalNode a test or a CLI call makes by default) live in
    <cache>/tests; the downloads and assembled homes still come from <cache>, so nothing is fetched twice."""
    tests = tmp_path / "tests"
    (tests / "unit").mkdir(parents=True)
    shutil.copy(CONFTEST, tests / "conftest.py")
    (tests / "unit" / "test_where.py").write_text(WHERE)
    user_cache = tmp_path / "user-cache"
    env = {k: v for k, v in os.environ.items() if k not in ("HYBRID_TEST_CACHE_DIR", "HYBRID_ARTIFACTS_DIR")}
    env["HYBRID_CACHE_DIR"] = str(user_cache)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert f"CACHE={user_cache / 'tests'}\n" in out and f"ENV={user_cache / 'tests'}\n" in out
    assert f"ARTIFACTS={user_cache}\n" in out
