"""A third engine, in memory: the proof that an engine is one folder.

:class:`FakeEngine` (the dialect: its own vector field and k-NN query, its capabilities) and :class:`FakeCluster` (the port: every :class:`adapter.engines.port.Cluster` method,
over indices, aliases and templates held in memory, with a small BM25 and a cosine k-NN that
really search). Nothing outside this folder knows it exists: ``init_index``, ``Ingestor``,
``Searcher`` and ``plan_spec`` take a ``FakeCluster`` where they take a client. It runs no fusion
server-side (no fusion method lists it among its servers), so hybrid queries are fused in the
client, with a notice saying so.
"""

from .cluster import FakeCluster
from .engine import FAKE, FakeCapabilities, FakeEngine

__all__ = ["FAKE", "FakeCapabilities", "FakeCluster", "FakeEngine"]
