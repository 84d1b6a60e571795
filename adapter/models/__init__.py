"""The models the adapter runs in Python: embedders (and their fingerprint) and the embedding cache.
Importing this package loads no model library: each loads when first used."""
