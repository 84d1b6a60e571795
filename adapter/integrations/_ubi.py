"""The framework components' UBI opt-in: each search leaves a UBI query record, as
``hybrid serve --ubi`` and :class:`adapter.traffic.logger.UbiLogger` do for the library (issue 40).

Off unless asked. A component takes ``ubi=``:

- ``None`` / ``False``: nothing is logged (the default);
- ``True``: records go to ``ubi_queries`` / ``ubi_events`` on the component's own cluster (created
  with the UBI specification's mapping where missing), client id the framework's name;
- a mapping with any of ``client_id``, ``queries_index``, ``events_index``, ``store_query_text``
  (``False``: no query text is stored, a hash groups the searches of one query): the same, so set;
  it serialises (Haystack's ``to_dict``);
- a ready :class:`~adapter.traffic.logger.UbiLogger` (shared with a service, say): its indices and
  text setting; the client id is the framework's name unless a mapping says another.

The logger is built at the first search, on the searcher's cluster, and written in the background
(a search never waits for it); :attr:`UbiLink.logger` gives it to flush or close. Each hit's
:class:`~adapter.integrations._common.HitInfo` carries the record's ``query_id``, for the click events
an application sends (``UbiLogger.log_event``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.search.results import SearchResult
    from adapter.traffic.logger import UbiLogger

KEYS = ("client_id", "queries_index", "events_index", "store_query_text")


@dataclass(frozen=True)
class UbiOptIn:
    """What a component was asked to log, and where (see the module docstring)."""

    client_id: str
    queries_index: str = "ubi_queries"
    events_index: str = "ubi_events"
    store_query_text: bool = True
    logger: Any = None  # a ready UbiLogger; then its own indices and text setting apply

    def __post_init__(self) -> None:
        for key in ("client_id", "queries_index", "events_index"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"ubi: {key} is a non-empty string, got {value!r}")
        if not isinstance(self.store_query_text, bool):
            raise InputError(f"ubi: store_query_text is true or false, got {self.store_query_text!r}")

    @classmethod
    def of(cls, value: Any, framework: str) -> UbiOptIn | None:
        """``ubi=`` as a component takes it; anything else is an :class:`InputError` saying what is."""
        if value is None or value is False:
            return None
        if value is True:
            return cls(framework)
        if callable(getattr(value, "log_search", None)):
            return cls(framework, logger=value)
        if isinstance(value, Mapping):
            unknown = sorted(str(k) for k in value if k not in KEYS)
            if unknown:
                raise InputError(f"ubi: unknown option {', '.join(map(repr, unknown))}; it takes {', '.join(KEYS)}")
            return cls(**{"client_id": framework, **value})
        raise InputError(
            f"ubi takes True, False, a mapping of {', '.join(KEYS)} or a UbiLogger, got {type(value).__name__}"
        )

    def as_json(self) -> dict[str, Any]:
        """What serialises (Haystack's ``to_dict``): a given logger's own settings, not the logger."""
        if self.logger is not None:
            store = self.logger.store
            return {
                "client_id": self.client_id,
                "queries_index": store.queries_index,
                "events_index": store.events_index,
                "store_query_text": bool(self.logger.store_query_text),
            }
        return {
            "client_id": self.client_id,
            "queries_index": self.queries_index,
            "events_index": self.events_index,
            "store_query_text": self.store_query_text,
        }


class UbiLink:
    """A component's logger, built once at its first search (thread-safe); off when not opted in."""

    def __init__(self, opt_in: UbiOptIn | None) -> None:
        self.opt_in = opt_in
        self._logger: UbiLogger | None = opt_in.logger if opt_in is not None else None
        self._lock = threading.Lock()

    def as_json(self) -> dict[str, Any] | None:
        """What the component's ``ubi=`` serialises as (:meth:`UbiOptIn.as_json`); None when off."""
        return self.opt_in.as_json() if self.opt_in is not None else None

    @property
    def logger(self) -> UbiLogger | None:
        """The logger once a search built it (or the one given); None while off or before the first search."""
        return self._logger

    def open(self, searcher: Any) -> None:
        """Build the logger on ``searcher``'s cluster now (creating the UBI indices where missing), so a
        component asked for what it cannot do fails at construction; nothing when off or given one."""
        if self.opt_in is not None and self._logger is None:
            self._build(searcher, self.opt_in)

    def log(self, searcher: Any, result: SearchResult) -> str | None:
        """Queue ``result``'s query record (never waits on the cluster); its ``query_id``, None when off."""
        if self.opt_in is None:
            return None
        logger = self._logger or self._build(searcher, self.opt_in)
        query_id: str = logger.log_search(result, client_id=self.opt_in.client_id, index=searcher.alias)
        return query_id

    def _build(self, searcher: Any, opt_in: UbiOptIn) -> UbiLogger:
        from adapter.aio import Blocking
        from adapter.traffic.logger import UbiLogger
        from adapter.traffic.store import UbiStore

        with self._lock:
            if self._logger is None:
                # an asyncio client answers on its loop only
                if isinstance(getattr(searcher.cluster, "client", None), Blocking):
                    raise InputError(
                        "ubi=True (or its options) needs a component over a sync Searcher; over an asyncio "
                        "client give ubi= a UbiLogger built on a sync client (UbiLogger(connect(url)))"
                    )
                store = UbiStore(searcher.cluster, queries_index=opt_in.queries_index, events_index=opt_in.events_index)
                self._logger = UbiLogger(store, store_query_text=opt_in.store_query_text)
            return self._logger
