"""A fake OpenSearch cluster's answers for an index that exists: what ``init_index`` reads before it decides what to
change (the alias, the index's mapping and settings, its templates, its search pipelines)."""

from __future__ import annotations

from typing import Any, Callable

from adapter.engines.opensearch import OPENSEARCH
from adapter.index.assets import IndexNames, IndexSpec


def existing_index(
    spec: IndexSpec, *, mapping: dict[str, Any], default_pipeline: str, pipelines: Callable[[Any], Any]
) -> dict[str, Any]:
    """Index ``docs`` (``docs-v1`` behind the alias) as ``spec`` renders it, with the live ``mapping`` (its _meta may
    differ from the assets') and ``default_pipeline`` in its settings; ``pipelines`` answers every search-pipeline
    call. Merge the node's answers (``GET /``, ``GET /_nodes*``) and any other into it."""
    names = IndexNames("docs")
    components = OPENSEARCH.render_components(names, spec)

    def component(call: Any) -> dict[str, Any]:
        name = call.path.rsplit("/", 1)[-1]
        return {"component_templates": [{"name": name, "component_template": components[name]}]}

    settings = {"number_of_shards": "1", "search": {"default_pipeline": default_pipeline}}
    return {
        "HEAD /[!_]*": True,
        "HEAD */_alias*": True,
        "GET */_alias*": {"docs-v1": {"aliases": {"docs": {}}}},
        "GET /docs-v1": {
            "docs-v1": {
                "mappings": mapping,
                "settings": {"index": {**settings, **components["docs-text"]["template"]["settings"]}},
            }
        },
        "GET /_component_template/*": component,
        "GET /_index_template/*": lambda call: {
            "index_templates": [{"name": "docs", "index_template": OPENSEARCH.render_index_template(names, spec)}]
        },
        "* /_search/pipeline/*": pipelines,
        "GET /_cluster/health*": {"status": "green", "timed_out": False},
    }
