"""Use cases that administer a live index: init (and the first ingest's analyzer choice), calibrate, plan against
the cluster, migrate."""
