"""Moved to :mod:`adapter.admin.calibrate` (a use case: it searches the live index). Kept only while
``adapter/traffic/calibrate.py`` still imports this name; import ``adapter.admin.calibrate``."""

from __future__ import annotations

from adapter.admin.calibrate import CalibrationReport, store_adaptive

__all__ = ["CalibrationReport", "store_adaptive"]
