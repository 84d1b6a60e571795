"""Adapters for other frameworks, each an optional extra: :mod:`.langchain` (``langchain``)."""
