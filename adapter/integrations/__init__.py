"""Components for other frameworks, each behind its own extra: :mod:`.langchain` (``langchain``: a
retriever and a ``VectorStore``), :mod:`.haystack` (``haystack``: a retriever and a document writer),
:mod:`.llamaindex` (``llamaindex``: a retriever and an ingestion step),
:mod:`.ray_data` (``ray``: embedding and indexing over a Ray cluster). Each searches through
:class:`adapter.Searcher` and writes through :class:`adapter.Ingestor`; the core imports none of them."""
