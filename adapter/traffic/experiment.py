"""Interleaved searches: the running fusion and a candidate, one page, each hit's team remembered.

:class:`Interleaver` runs a query with both fusions (two searches of the same index), drafts one
page from the two rankings (:func:`adapter.traffic.interleave.team_draft`) and, with a
:class:`~adapter.traffic.logger.UbiLogger`, logs the page with its teams, so ``hybrid traffic report``
can credit the clicks that follow. The coin flips are seeded by the query id: the same id, the same
page (a page reloaded is the page that was logged).

Cost: two searches per query instead of one (run one after the other; for a page of ``k`` hits
each fusion is asked for ``k``). Interleave a share of the traffic where that matters.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapter.traffic import ubi
from adapter.traffic.interleave import Interleaving, Team, team_draft
from adapter.traffic.logger import fusion_label, new_query_id

if TYPE_CHECKING:
    from adapter.fusion import Fusion
    from adapter.search.results import Hit, SearchResult
    from adapter.search.searcher import Searcher
    from adapter.traffic.logger import UbiLogger


@dataclass(frozen=True)
class InterleavedResult:
    """The page (``hits``, ranks 1..n in page order), its teams, and both searches as they ran."""

    query_id: str
    hits: tuple[Hit, ...]
    page: Interleaving
    baseline: SearchResult
    candidate: SearchResult

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]


class Interleaver:
    """Team-draft interleaving of ``baseline`` (None: the index's own fusion) and ``candidate``
    over one :class:`~adapter.search.searcher.Searcher`."""

    def __init__(
        self,
        searcher: Searcher,
        candidate: Fusion,
        *,
        baseline: Fusion | None = None,
        logger: UbiLogger | None = None,
        seed: str = "",
    ) -> None:
        self.searcher = searcher
        self.candidate = candidate
        self.baseline = baseline
        self.logger = logger
        self.seed = seed

    def search(
        self, query: str, *, k: int = 10, client_id: str = "anonymous", query_id: str | None = None, **kwargs: Any
    ) -> InterleavedResult:
        """Both searches (``kwargs`` go to each: filters, depth, ...), the drafted page, its record
        logged when there is a logger."""
        query_id = query_id or new_query_id()
        base = self.searcher.search(query, technique="hybrid", fusion=self.baseline, k=k, **kwargs)
        cand = self.searcher.search(query, technique="hybrid", fusion=self.candidate, k=k, **kwargs)
        page = team_draft(base.ids, cand.ids, k, random.Random(f"{self.seed}:{query_id}"))
        by_id = {h.id: h for h in cand.hits} | {h.id: h for h in base.hits}
        hits = tuple(dataclasses.replace(by_id[doc], rank=i) for i, doc in enumerate(page.ids, start=1))
        if self.logger is not None:
            names = self.names()
            self.logger.log_search(
                base,
                client_id=client_id,
                query_id=query_id,
                index=self.searcher.alias,
                hit_ids=page.ids,
                interleaving=ubi.interleaving_attributes(names[Team.BASELINE], names[Team.CANDIDATE], page),
            )
        return InterleavedResult(query_id, hits, page, base, cand)

    def names(self) -> dict[Team, str]:
        """The two fusions' labels in the records: the baseline's is ``index-default`` when the index
        chooses it (an adaptive default weighs each query its own way; one label keeps them one experiment)."""
        return {
            Team.BASELINE: fusion_label(self.baseline) or "index-default",
            Team.CANDIDATE: fusion_label(self.candidate) or "?",
        }
