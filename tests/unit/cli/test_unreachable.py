"""A cluster that is not there is said once (issue 39): before, `hybrid init` against a closed port printed 8
`WARNING adapter.requests: GET / no answer ...` lines (the client asking again) before the clear error."""

from __future__ import annotations

import socket

import pytest

from adapter.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # free once closed: nothing listens there


@pytest.mark.unit
def test_an_unreachable_cluster_is_one_error_line(capsys):
    code = main(
        [
            "init",
            "--index",
            "docs",
            "--embedder",
            "minilm",
            "--analyzer",
            "english",
            "--url",
            f"http://127.0.0.1:{_closed_port()}",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "WARNING" not in err and err.count("\n") == 1 and "cannot reach" in err, err


@pytest.mark.unit
def test_with_v_each_unanswered_request_is_shown(capsys):
    main(["-v", "init", "--index", "docs", "--embedder", "minilm", "--url", f"http://127.0.0.1:{_closed_port()}"])
    assert "no answer" in capsys.readouterr().err
