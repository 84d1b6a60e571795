"""Keeping faiss/nmslib indices from killing the local OpenSearch node.

The k-NN zip on Maven has no native libraries. A faiss or nmslib field is accepted at index
creation; the first refresh that builds its graph then throws ``UnsatisfiedLinkError`` and the
JVM exits (LangChain's default engine is nmslib; 3.x's default engine is faiss).

``index.knn.advanced.approximate_threshold: -1`` tells k-NN never to build native graphs: such
fields are then served by exact search (Java), correct and fine at development sizes. Index
settings cannot be node defaults, so a *legacy* template matching ``*`` at the lowest order sets
it. Legacy templates merge with other legacy templates and stay out of the way of composable
ones (a composable ``*`` template would collide with every user template of the same priority),
but that is also the gap: an index matched by a composable template, or created with its own
threshold, is not covered, so ``up`` says so.
"""

from __future__ import annotations

from typing import Any

from adapter.local import procs

TEMPLATE = "hybrid-local-no-native-knn"
BODY = {
    "index_patterns": ["*"],
    "order": -1000,  # the lowest: any other legacy template overrides it
    "settings": {"index.knn.advanced.approximate_threshold": -1},
}
# What `hybrid local status` says (`up` says nothing: adapter indexes use lucene, and `init --engine faiss` is refused
# here).
STATUS_LINE = (
    "lucene only (the Maven k-NN plugin has no faiss/nmslib libraries). Other tools' faiss/nmslib indices get exact "
    f"search (template {TEMPLATE!r}), except through a composable template: docs/LOCAL-NODE.md"
)


def install(url: str, **http: Any) -> None:
    procs.get_json(f"{url}/_template/{TEMPLATE}", method="PUT", body=BODY, timeout=30, **http)
