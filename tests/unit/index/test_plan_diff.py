"""The plan's diff is pure (issue 42): desired and live values in, a plan out, with no engine, port,
model or use case imported; reading the cluster and rendering are the admin use case's."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from adapter.errors import ConfigurationError
from adapter.index.assets import IndexSpec
from adapter.index.plan import Desired, LiveState, Rendered, incompatibilities, plan
from adapter.models.fingerprint import EmbeddingFingerprint

FP = EmbeddingFingerprint("m", "minilm", "ab" * 32, 384, True)
VALUES = {
    "adapter._enums",
    "adapter.errors",
    "adapter.fusion",
    "adapter.index.assets",
    "adapter.index.spec",
    "adapter.models.fingerprint",
}


def _adapter_imports(module: str) -> set[str]:
    """Every adapter module ``module`` names in an import, wherever the import is (functions and
    TYPE_CHECKING blocks included)."""
    path = Path(importlib.util.find_spec(module).origin)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adapter"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("adapter"))
    return found


def test_the_diff_imports_values_only():
    assert _adapter_imports("adapter.index.plan") <= VALUES


# A rendering written out by hand: the diff needs no engine to compare with it.
RENDERED = Rendered(
    mapping={"properties": {"text": {"type": "text", "analyzer": "standard"}}, "_meta": {"owner": "assets"}},
    components={"docs-text": {"template": {"settings": {"analysis": {"analyzer": {"a": {"type": "standard"}}}}}}},
    index_template={"index_patterns": ["docs-v*"], "composed_of": ["docs-text"]},
    pipelines={"docs-rrf": {"phase_results_processors": []}},
    default_pipeline="docs-rrf",
)
DESIRED = Desired("docs", IndexSpec(FP, analyzer="standard"))


def test_an_empty_cluster_gets_everything_created_in_the_order_it_is_sent():
    result = plan(DESIRED, RENDERED, LiveState("docs"))
    assert [(c.kind, c.name, c.action) for c in result.changes] == [
        ("component_template", "docs-text", "create"),
        ("index_template", "docs", "create"),
        ("pipeline", "docs-rrf", "create"),
        ("index", "docs-v1", "create"),
    ]
    assert result.index == "docs-v1" and result.next_index == "docs-v1" and result.default_pipeline == "docs-rrf"


def test_a_live_index_that_matches_the_rendering_is_in_sync_and_keeps_its_own_meta():
    body = {
        "mappings": {
            "properties": {"text": {"type": "text", "analyzer": "standard"}},
            "_meta": {"owner": "assets", "adaptive": {"kept": True}},
        },
        "settings": {
            "index": {
                "number_of_shards": "1",
                "analysis": {"analyzer": {"a": {"type": "standard"}}},
                "search": {"default_pipeline": "docs-rrf"},
            }
        },
    }
    live = LiveState(
        "docs",
        indices=("docs-v2",),
        versions=("docs-v1", "docs-v2"),
        index_body=body,
        components=dict(RENDERED.components),
        index_template=RENDERED.index_template,
        pipelines=dict(RENDERED.pipelines),
    )
    result = plan(DESIRED, RENDERED, live)
    assert result.in_sync and result.index == "docs-v2" and result.next_index == "docs-v3"
    changed = {
        **body,
        "settings": {"index": {**body["settings"]["index"], "analysis": {"analyzer": {"a": {"type": "simple"}}}}},
    }
    assert incompatibilities(changed["mappings"], changed["settings"], RENDERED, DESIRED.spec) == [
        "setting index.analysis.analyzer.a.type: cluster has 'simple', assets want 'standard'"
    ]


def test_a_plain_index_in_the_aliass_place_is_refused():
    with pytest.raises(ConfigurationError, match="not an alias"):
        plan(DESIRED, RENDERED, LiveState("docs", plain_index=True))
