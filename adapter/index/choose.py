"""Choosing a new index's analyzer and embedder from its documents (the rule: :mod:`adapter.index.language`),
recording the choice in the index's ``_meta.analysis``, and making it at the first ingest when the
index was made before any document existed.

The flow users meet:

- ``hybrid init --index docs --sample docs.jsonl`` (or ``hybrid eval``, which has its corpus): chosen
  at once, from the sample;
- ``hybrid init --index docs`` with neither ``--analyzer`` nor ``--sample``: the index is made with
  :data:`~adapter.index.language.DEFAULT_ANALYZER` and marked *pending*; the first ``hybrid ingest``
  reads its first documents, chooses, and, while the index is still empty, rebuilds it with the
  chosen analyzer before writing anything (:func:`adapter.admin.init.settle_pending`, a use case beside
  init). Writes that land before a choice (another client, a partitioned ingest) end the wait: the
  index keeps what it has.
"""

from __future__ import annotations

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
