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

from . import procs

TEMPLATE = "hybrid-local-no-native-knn"
BODY = {
    "index_patterns": ["*"],
    "order": -1000,  # the lowest: any other legacy template overrides it
    "settings": {"index.knn.advanced.approximate_threshold": -1},
}
WARNING = (
    "note: this node's k-NN plugin has no faiss/nmslib libraries (only the lucene engine builds graphs). "
    f"Indices without a composable template get index.knn.advanced.approximate_threshold=-1 (template {TEMPLATE!r}): "
    "faiss/nmslib fields there are served by exact search. A faiss/nmslib index created through a composable "
    "index template, or with its own approximate_threshold, still brings the node down when it is refreshed."
)


def install(url: str, **http) -> None:
    procs.get_json(f"{url}/_template/{TEMPLATE}", method="PUT", body=BODY, timeout=30, **http)
