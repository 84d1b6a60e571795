"""Choosing a new index's analyzer and embedder from its documents (the rule: :mod:`adapter.index.language`),
recording the choice in the index's ``_meta.analysis``, and making it at the first ingest when the
index was made before any document existed.

The flow users meet:

- ``hybrid init --index docs --sample docs.jsonl`` (or ``hybrid eval``, which has its corpus): chosen
  at once, from the sample;
- ``hybrid init --index docs`` with neither ``--analyzer`` nor ``--sample``: the index is made with
  :data:`~adapter.index.language.DEFAULT_ANALYZER` and marked *pending*; the first ``hybrid ingest``
  reads its first documents, chooses, and, while the index is still empty, rebuilds it with the
  chosen analyzer before writing anything (:func:`settle_pending`). Writes that land before a choice
  (another client, a partitioned ingest) end the wait: the index keeps what it has.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.index.analysis import AnalysisSupport
from adapter.index.catalog import index_meta, read_index_info
from adapter.index.language import DEFAULT_ANALYZER, MULTILINGUAL_EMBEDDER, AnalysisChoice, choose, recorded_choice


def choose_analysis(
    client: ClusterLike, texts: Iterable[str] | None, *, source: str = "the documents", engine: Engine | None = None
) -> AnalysisChoice:
    """The analyzer and embedder a new index of ``texts`` gets on this cluster (the same rule as
    ``hybrid init``); ``texts`` None: no documents yet. Without a language detector (the ``language``
    extra) the default, saying how to install it."""
    from adapter._optional import install_hint
    from adapter.models.language import detect_languages

    support = AnalysisSupport.of(cluster_for(client, engine).probe())
    if texts is None:
        return choose(None, support)
    languages = detect_languages(texts, source=source)
    if languages is None:
        return AnalysisChoice(
            DEFAULT_ANALYZER,
            MULTILINGUAL_EMBEDDER,
            f"no language detector to read the documents with ({install_hint('language')})",
        )
    return choose(languages, support)


def record_choice(cluster: Cluster, index: str, choice: AnalysisChoice, *, pending: bool = False) -> None:
    """Keep ``choice`` in ``index``'s ``_meta.analysis`` (``pending``: the first ingest still chooses)."""
    meta = index_meta(cluster, index)
    cluster.put_mapping(
        index,
        {"_meta": {**meta, "analysis": {**choice.to_meta(), "pending": pending}}},
        action=f"recording the analyzer choice of {index}",
    )


def is_pending(cluster: Cluster, alias: str) -> bool:
    """Whether ``hybrid init`` left ``alias``'s analyzer to its first documents (False: no such index)."""
    from adapter.errors import ConfigurationError

    try:
        info = read_index_info(cluster, alias)
    except ConfigurationError:
        return False  # the ingest says what is missing
    recorded = recorded_choice(index_meta(cluster, info.index))
    return bool(recorded and recorded.get("pending"))


def settle_pending(cluster: Cluster, alias: str, texts: Iterable[str], *, source: str) -> AnalysisChoice | None:
    """At an ingest into ``alias``: when ``hybrid init`` left the analyzer to the first documents and the
    index is still empty, choose it from ``texts`` and rebuild the empty index with it if it differs
    (the embedder stays the index's). Returns the choice made, else None (nothing was pending)."""
    from adapter.index.init import init_index
    from adapter.index.live import live_spec

    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    recorded = recorded_choice(meta)
    if not recorded or not recorded.get("pending"):
        return None
    live = live_spec(cluster, alias)
    if live is None:
        return None
    if cluster.count(info.index, action=f"counting {info.index}") > 0:
        kept = AnalysisChoice(live.analyzer, live.embedder, "documents were written before the first ingest chose")
        record_choice(cluster, info.index, kept)
        return kept
    choice = replace(choose_analysis(cluster, texts, source=source), embedder=live.embedder)
    index = info.index
    if choice.analyzer != live.analyzer:
        kept_meta = {k: v for k, v in meta.items() if k not in live.index_spec().meta and k != "analysis"}
        cluster.delete_indices(
            [index], action=f"deleting the empty {index} to rebuild it with analyzer {choice.analyzer}"
        )
        report = init_index(
            cluster,
            alias,
            replace(live, analyzer=choice.analyzer).index_spec(),
            weights=live.weights,
            extra_pipelines=live.pipelines,
        )
        index = report.index
        if kept_meta:  # what calibrate or others kept beside the assets' keys
            cluster.put_mapping(
                index, {"_meta": {**index_meta(cluster, index), **kept_meta}}, action=f"restoring _meta of {index}"
            )
    record_choice(cluster, index, choice)
    return choice
