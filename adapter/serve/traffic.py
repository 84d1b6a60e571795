"""``hybrid serve --ubi`` / ``--interleave``: the serve's side of learning from live traffic (issue 40).

- every search answered (``/search``, each column of ``/api/compare``) leaves a UBI query record,
  queued for :class:`~adapter.traffic.logger.UbiLogger`'s background writer (a search never waits
  for it), and its answer carries the record's ``query_id`` (search contract 5);
- ``POST /events`` takes the page's events (UBI JSON, checked against ``ubi-event.schema.json``);
- with a candidate, a ``/search`` of the running fusion (hybrid, the index's default, first page,
  no rerank or MMR) is answered with the team draft of the two
  (:class:`~adapter.traffic.experiment.Interleaver`), its teams logged, its clicks credited in
  :class:`LiveTally` for ``/metrics``. ``hybrid traffic report`` reads the same from the store.

:class:`LiveTally` is pure; :class:`Traffic` is the shell around the logger and the interleaver.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapter.errors import InputError
from adapter.search.results import Technique
from adapter.traffic import ubi
from adapter.traffic.interleave import Interleaving, Outcome, Tally, Team, credit
from adapter.traffic.logger import LoggerStats

if TYPE_CHECKING:
    import numpy as np

    from adapter.search import Searcher
    from adapter.search.results import SearchResult
    from adapter.serve.params import Config
    from adapter.traffic.experiment import Interleaver
    from adapter.traffic.logger import UbiLogger

ANONYMOUS = "anonymous"  # the client_id of a search that sent none
KEEP_PAGES = 100_000  # interleaved pages remembered for their clicks (~1 KB each)


@dataclass(frozen=True)
class TrafficSettings:
    """What ``hybrid serve --ubi`` logs and where; ``interleave``: the candidate's fusion name (as
    ``fusion`` takes it), None: no interleaving."""

    store_query_text: bool = True
    interleave: str | None = None
    queries_index: str = ubi.QUERIES_INDEX
    events_index: str = ubi.EVENTS_INDEX


class LiveTally:
    """Wins, losses and ties of the candidate over the interleaved pages this process served, as the
    clicks arrive (a page is a tie until its clicks decide it, as in :func:`adapter.traffic.report.experiments`).
    The last ``keep`` pages take clicks; an older page keeps the outcome it had. Thread-safe."""

    def __init__(self, keep: int = KEEP_PAGES) -> None:
        self._keep = keep
        self._pages: OrderedDict[str, tuple[Interleaving, set[str]]] = OrderedDict()
        self._counts = {o: 0 for o in Outcome}
        self._lock = threading.Lock()

    def shown(self, query_id: str, page: Interleaving) -> None:
        with self._lock:
            if query_id in self._pages:
                return
            self._pages[query_id] = (page, set())
            self._counts[Outcome.TIE] += 1
            while len(self._pages) > self._keep:
                self._pages.popitem(last=False)

    def clicked(self, query_id: str, doc: str) -> bool:
        """Credit a click on ``doc`` of page ``query_id``; False when that changed nothing (a page
        not remembered, a document not on it, or clicked before)."""
        with self._lock:
            known = self._pages.get(query_id)
            if known is None or known[0].team_of(doc) is None or doc in known[1]:
                return False
            page, clicks = known
            before = credit(page, clicks).outcome
            clicks.add(doc)
            after = credit(page, clicks).outcome
            self._counts[before] -= 1
            self._counts[after] += 1
            return True

    def team_of(self, query_id: str, doc: str) -> Team | None:
        """The team that put ``doc`` on page ``query_id`` (None: a page not remembered, or a document not on it)."""
        with self._lock:
            known = self._pages.get(query_id)
            return None if known is None else known[0].team_of(doc)

    def tally(self) -> Tally:
        with self._lock:
            return Tally(self._counts[Outcome.WIN], self._counts[Outcome.LOSS], self._counts[Outcome.TIE])


class Traffic:
    """One serve's UBI logger, and its interleaver when there is a candidate."""

    def __init__(self, logger: UbiLogger, index: str, interleaver: Interleaver | None = None) -> None:
        self.logger = logger
        self.index = index
        self.interleaver = interleaver
        self.tally = LiveTally()
        self.names = interleaver.names() if interleaver is not None else None

    @classmethod
    def open(cls, searcher: Searcher, settings: TrafficSettings) -> Traffic:
        """The logger over ``searcher``'s cluster (the UBI indices created where missing) and the
        interleaver of ``settings.interleave``: an unknown fusion is refused here, before serving."""
        from adapter.fusion import parse_fusion
        from adapter.serve.params import ADAPTIVE
        from adapter.traffic.experiment import Interleaver
        from adapter.traffic.logger import UbiLogger
        from adapter.traffic.store import UbiStore

        interleaver = None
        if settings.interleave:
            name = settings.interleave.strip().lower()
            # a policy fuses as a Fusion does
            candidate: Any = searcher.policy if name == ADAPTIVE else parse_fusion(name)
            if candidate is None:
                raise InputError(
                    f"--interleave {name}: the index has no adaptive policy (hybrid calibrate) to interleave"
                )
            interleaver = Interleaver(searcher, candidate)
        store = UbiStore(searcher.cluster, queries_index=settings.queries_index, events_index=settings.events_index)
        logger = UbiLogger(store, store_query_text=settings.store_query_text)
        if interleaver is not None:
            interleaver.logger = logger
        return cls(logger, searcher.alias, interleaver)

    # -- searches -----------------------------------------------------------------------------------
    def log(self, result: SearchResult, client_id: str | None) -> str:
        """Queue ``result``'s record; its ``query_id``."""
        return self.logger.log_search(result, client_id=client_id or ANONYMOUS, index=self.index)

    def interleaves(self, config: Config) -> bool:
        """Whether ``config`` is the running fusion's search, the one a candidate is compared with:
        hybrid with the index's own fusion, from the first hit, neither reranked nor diversified (a page
        reordered after the draft would credit clicks to the wrong team)."""
        return (
            self.interleaver is not None
            and config.technique is Technique.HYBRID
            and config.fusion is None
            and not config.weights
            and not config.rank_constant
            and config.from_ == 0
            and not config.rerank
            and config.mmr is None
        )

    def interleaved(
        self, query: str, config: Config, vector: np.ndarray | None, client_id: str | None
    ) -> tuple[SearchResult, dict[str, Any]]:
        """The drafted page as a search result (the baseline's, its hits the page's) and what the answer
        adds: ``query_id`` and ``interleaving`` (the two fusions' labels, as the record and the report name them)."""
        from adapter.search.page import SearchOptions

        assert self.interleaver is not None and self.names is not None
        page = self.interleaver.search(
            query,
            k=config.k,
            client_id=client_id or ANONYMOUS,
            depth=config.depth,
            query_vector=vector,
            explain=config.explain,
            filters=dict(config.filters) or None,
            options=SearchOptions(highlight=config.highlight, full_text=config.full_text),
        )
        self.tally.shown(page.query_id, page.page)
        result = dataclasses.replace(page.baseline, hits=page.hits)
        labels = {team.value: label for team, label in self.names.items()}
        return result, {
            "query_id": page.query_id,
            "interleaving": {"baseline": labels["baseline"], "candidate": labels["candidate"]},
        }

    # -- events -------------------------------------------------------------------------------------
    def event(self, body: Any) -> bool:
        """Queue one event of the page (:class:`InputError` saying what is wrong; nothing queued then);
        a click on an interleaved page this process remembers is credited to its team and stored with it
        (``event_attributes.hybrid.team``: the page never knows the teams, so a person cannot bias them).
        False: the queue was full, dropped."""
        if not isinstance(body, Mapping):
            raise InputError(
                "an event is a JSON object (UBI 1.0: action_name, query_id, client_id, timestamp, event_attributes)"
            )
        ubi.validate("event", body)
        event = ubi.parse_event(body)
        team = None
        if event.action == ubi.CLICK and event.query_id and event.object_id is not None:
            team = self.tally.team_of(event.query_id, event.object_id)
            self.tally.clicked(event.query_id, event.object_id)
        return self.logger.log_event(ubi.with_team(body, team.value) if team else body, validate=False)

    @property
    def stats(self) -> LoggerStats:
        return self.logger.stats

    def close(self) -> None:
        """Write what is queued (bounded), then stop the writer."""
        self.logger.close(timeout=10.0)
