"""An environment with no connection settings in it, for tests of where connect() takes its settings from."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapter.engines.connection import CONFIG_ENV, ENV

AWS_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")  # read for SigV4 when nothing names the region


def clean_connection_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Every variable connect() reads unset (each OPENSEARCH_* setting, HYBRID_CONFIG, the AWS region and profile),
    and the user's config folder and AWS files pointed under ``home``, where there are none."""
    for name in (*ENV.values(), CONFIG_ENV, *AWS_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "no-aws-credentials"))
