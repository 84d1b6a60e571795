"""The searcher: the seeds' techniques, fused by the server where it can.

- ``bm25``: a ``match``-type query over the text fields.
- ``dense``: a k-NN query; the query vector is computed in Python by the index's embedder.
- ``hybrid``: one hybrid request (text leg + vector leg) fused by the server — on OpenSearch a
  ``hybrid`` query with a search pipeline, named or temporary; never without one (the server
  would return unfused results); on Elasticsearch an ``rrf``/``linear`` retriever, or ``query`` +
  ``knn`` with the scores summed (the engine builds it: :mod:`adapter.engines`).
- ``client-rrf``: both legs in one ``_msearch``, fused here with the server's RRF formula;
  ``client``: the same with any fusion (:mod:`adapter.fusion`: DBSF, a normalisation, the sum).
- rerank (cross-encoder over the top N) and MMR (over stored vectors) can follow any of them.

When the cluster cannot run the requested fusion, the searcher fuses the legs in the client by that
same fusion (the server's formula) and says so in ``SearchResult.notices`` (or raises
:class:`~adapter.errors.CapabilityError` if fallback is off); so does a fusion the cluster refuses
when asked (Elasticsearch: a retriever it lacks, a licence that does not cover it).

A search is a chain of small stages, composed per request (:mod:`.compose`):

==============  ======================================================================
:mod:`.request`   the parameters, validated, and the sizes that follow (pure)
:mod:`.planning`  where the fusion runs, adaptive weights, MMR and page parts (pure + lookups)
:mod:`.retrieve`  every request sent, through the engine's port (:mod:`.bodies` builds them)
:mod:`.fuse`      client-side fusion and per-leg explanations (pure)
:mod:`.post`      rerank, MMR, the page cut, vectors stripped (pure)
:mod:`.assemble`  hits from raw hits, the result's notices (pure)
:mod:`.recovery`  retries and fallbacks, in one place
:mod:`.state`     what the searcher knows of the index: one immutable value, replaced when it changes
==============  ======================================================================

Construction does no I/O: :meth:`Searcher.open` reads the index (:mod:`adapter.index.catalog`) and the
cluster's capabilities once and hands them in.
"""

from __future__ import annotations

from adapter.engines.placement import FusionPlan
from adapter.search.planning import FirstStage, SearchPlan
from adapter.search.recovery import PARTIAL_RETRY_PAUSE_S
from adapter.search.request import KNN_MAX_K, SearchRequest, TechniqueName
from adapter.search.searcher import Searcher
from adapter.search.state import IndexState

__all__ = [
    "KNN_MAX_K",
    "PARTIAL_RETRY_PAUSE_S",
    "FirstStage",
    "FusionPlan",
    "IndexState",
    "SearchPlan",
    "SearchRequest",
    "Searcher",
    "TechniqueName",
]
