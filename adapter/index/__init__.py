"""An index as ops manage it: its spec and JSON assets, the document contract, what the cluster holds
(catalog, scan), and the use cases that change it: ``init``, ``plan | apply | diff``, ``reindex``
(migrate), ``check``."""
