"""An index as ops manage it: its spec and JSON assets, the document contract, the pure plan (desired
and live values in, a plan out), what the cluster holds (catalog, scan), and the use cases ``init``
and ``check``; planning against the cluster and migrations are :mod:`adapter.admin`'s."""
