"""A third engine, in memory: the proof that an engine is one folder.

:class:`FakeEngine` (the dialect: its own vector field and k-NN query, its capabilities) and :class:`FakeCluster` (the
port: every :class:`adapter.engines.port.Cluster` method,
over indices, aliases and templates held in memory, with a small BM25 and a cosine k-NN that
really search). Nothing outside this folder knows it exists: it registers itself with the engine
registry (below), and ``init_index``, ``Ingestor``, ``Searcher`` and ``plan_spec`` take a
``FakeCluster`` where they take a client. It implements the port's core and no facet (no search
pipelines), and its placement is the in-request one; it registers no fusion renderer, so hybrid
queries are fused in the client, with a notice saying so.
"""

from adapter.engines import registry

from .cluster import FakeCluster
from .engine import ENGINE, FAKE, FakeCapabilities, FakeEngine

registry.register(registry.EngineEntry("fake", "the fake engine", __name__))

__all__ = ["ENGINE", "FAKE", "FakeCapabilities", "FakeCluster", "FakeEngine"]
