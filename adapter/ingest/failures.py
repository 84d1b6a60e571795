"""Where an ingest's failures go: :class:`FailureLog` (the failures file, the counts, the first
thousand kept for the report) and the failures of rows the cluster never answered for."""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from adapter.engines import responses
from adapter.ingest.report import FailureSource, ItemFailure

NOT_SENT = "not sent: the connection to the cluster was lost before this row's turn"
INTERRUPTED = (
    "not confirmed written: the ingest was interrupted (Ctrl-C or SIGTERM) before this row's request was answered"
)


class FailureLog:
    """Failures as they happen: each is written to the failures file at once and counted; the report
    keeps the first :attr:`KEEP` (memory stays flat however many rows fail).

    The file is written only when asked: a ``path``, or ``default_file`` (what ``hybrid ingest`` does), whose
    name is ``ingest-failures-<alias>-<time>-<pid>-<random>.jsonl`` in the working folder, created exclusively: two
    ingests started in the same second never share one. It is created on the first failure, private to its user
    (0600). Without either, failures are only counted and kept (a library's report and exceptions carry them).
    """

    KEEP = 1_000

    def __init__(
        self, path: str | Path | None, alias: str, *, tag: str | None = None, default_file: bool = False
    ) -> None:
        self._path = Path(path) if path else None
        self._writes = self._path is not None or default_file
        self._alias = alias if tag is None else f"{alias}-{tag}"  # the default name's; a partition's tag: part-2-of-3
        self._fh: Any = None
        self._lock = threading.Lock()
        self.kept: list[ItemFailure] = []
        self.count = 0
        self.unconfirmed = 0  # not sent, or sent without an answer: a re-run completes them
        self.index_failed = 0  # entries the cluster refused (they were counted as written)
        self._closed = False

    @property
    def path(self) -> str | None:
        return str(self._path) if self._fh is not None else None

    def add(self, failure: ItemFailure) -> None:
        with self._lock:
            if self._closed:  # a sender an interrupt left behind answering late: its rows are listed already
                return
            if self._fh is None and self._writes:
                self._fh = self._open()
            if self._fh is not None:
                self._fh.write(
                    json.dumps(
                        {
                            "id": failure.id,
                            "line": failure.line,
                            "status": failure.status,
                            "stage": failure.source or "index",
                            "reason": failure.reason,
                        }
                    )
                    + "\n"
                )
            self.count += 1
            if failure.source == FailureSource.NOT_SENT or (failure.source is None and failure.status is None):
                self.unconfirmed += 1
            if failure.source is None:
                self.index_failed += 1
            if len(self.kept) < self.KEEP:
                self.kept.append(failure)

    @property
    def where(self) -> str:
        """Where the failures are listed, for messages."""
        if self.path is not None:
            return f"listed in {self.path}"
        first = "listed" if self.count <= self.KEEP else f"the first {self.KEEP} listed"
        return f"{first} in .failures of the report or of this error; no failures file was asked for"

    def _open(self) -> TextIO:
        if self._path is not None:
            return open(os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        while True:
            path = Path(f"ingest-failures-{self._alias}-{stamp}-{os.getpid()}-{secrets.token_hex(3)}.jsonl")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            self._path = path
            return open(fd, "w", encoding="utf-8")

    def close(self) -> str | None:
        with self._lock:
            if self._fh is not None and not self._closed:
                self._fh.close()
            self._closed = True
        return self.path


def unsent(doc_id: str, sources: dict[str, int | None], reason: str = NOT_SENT) -> ItemFailure:
    return ItemFailure(doc_id, reason, line=sources.get(doc_id), source=FailureSource.NOT_SENT)


def failure(info: dict[str, Any], sources: dict[str, int | None], stage: FailureSource | None = None) -> ItemFailure:
    doc_id, status, reason = responses.bulk_item(info)
    return ItemFailure(
        doc_id, reason, line=sources.get(doc_id) if doc_id is not None else None, status=status, source=stage
    )
