"""Ingest: read rows (sources), keep one partition of them, embed them and bulk-index them (ingestor),
and report what landed."""
