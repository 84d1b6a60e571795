"""The request id, the request log line and the CLI's log levels (no cluster: the lines the engines'
connections hand to adapter.observability.telemetry; tests/integration/test_observability.py has them on a real
node)."""

from __future__ import annotations

import logging
import threading

import pytest

from adapter.observability import telemetry
from adapter.cli import _log_to_stderr


def test_a_request_id_is_new_per_block_and_the_callers_wins():
    assert telemetry.current_request_id() is None
    with telemetry.request_id() as first:
        assert first.startswith("hybrid-") and len(first) == len("hybrid-") + 12
        with telemetry.request_id() as inner:  # a search inside the caller's block keeps the caller's id
            assert inner == first == telemetry.current_request_id()
    with telemetry.request_id() as second:
        assert second != first
    with telemetry.request_id("checkout-42") as given:
        assert given == "checkout-42"
    assert telemetry.current_request_id() is None


def test_a_request_id_stays_in_its_thread():
    seen = []
    with telemetry.request_id("mine"):
        t = threading.Thread(target=lambda: seen.append(telemetry.current_request_id()))
        t.start()
        t.join()
    assert seen == [None]


@pytest.mark.parametrize("bad", ["", "a\nb", "x" * 257])
def test_a_request_id_that_cannot_be_a_header_is_refused(bad):
    with pytest.raises(ValueError, match="request id"):
        with telemetry.request_id(bad):
            pass


def test_took_comes_from_the_start_of_the_answer_only():
    assert telemetry.took_of('{"took":12,"timed_out":false,"hits":{}}') == 12
    assert telemetry.took_of(b'{"took" : 7, "responses": []}') == 7
    assert telemetry.took_of('{"acknowledged":true}') is None
    assert (
        telemetry.took_of('{"hits":{"hits":[{"_source":{"took":3}}]}}') is None
    )  # a field of a document is not the server's took
    assert telemetry.took_of(None) is None


def test_a_request_is_debug_and_trouble_is_a_warning(caplog):
    caplog.set_level(logging.DEBUG, logger="adapter")
    with telemetry.request_id("r-1"):
        telemetry.log_request("POST", "/docs/_search?search_pipeline=_none", 200, 0.0123, '{"took":5,"hits":{}}')
        telemetry.log_request("POST", "/_bulk", 429, 0.2)
        telemetry.log_request("GET", "/", None, 5.0, error=ConnectionError("refused"))
    (ok, busy, lost) = caplog.records
    assert (ok.name, ok.levelno) == ("adapter.requests", logging.DEBUG)
    assert ok.getMessage() == "POST /docs/_search?search_pipeline=_none 200 took=5ms in 12.3 ms id=r-1"
    assert busy.levelno == logging.WARNING and busy.getMessage() == "POST /_bulk 429 in 200.0 ms id=r-1"
    assert (
        lost.levelno == logging.WARNING and lost.getMessage() == "GET / no answer in 5000.0 ms id=r-1 (ConnectionError)"
    )


@pytest.mark.parametrize(
    "verbosity, quiet, shown",
    [
        (0, False, {"WARNING", "ERROR"}),
        (1, False, {"INFO", "WARNING", "ERROR"}),
        (2, False, {"DEBUG", "INFO", "WARNING", "ERROR"}),
        (0, True, {"ERROR"}),
    ],
)
def test_the_cli_logs_by_its_flags_and_puts_the_level_back(capsys, verbosity, quiet, shown):
    logger = logging.getLogger("adapter.search")
    before = logging.getLogger("adapter").level, list(logging.getLogger("adapter").handlers)
    with _log_to_stderr(verbosity, quiet):
        for level in ("DEBUG", "INFO", "WARNING", "ERROR"):
            logger.log(getattr(logging, level), "at %s", level)
    err = capsys.readouterr().err
    assert {line.split()[0] for line in err.splitlines()} == shown
    assert (
        logging.getLogger("adapter").level,
        logging.getLogger("adapter").handlers,
    ) == before  # taken away after the command


def test_the_library_says_nothing_without_an_application_handler(capsys):
    import adapter  # noqa: F401  (its NullHandler keeps logging's last resort off stderr)

    logging.getLogger("adapter.search").warning("a retry")
    assert capsys.readouterr().err == ""
