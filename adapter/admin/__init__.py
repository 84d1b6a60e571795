"""Use cases that administer a live index: calibrate, plan against the cluster, migrate."""
