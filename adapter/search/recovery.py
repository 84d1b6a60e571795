"""Retries and fallbacks of a search, in one place.

A search runs as attempts. An attempt that meets one of these ends with a :class:`Recover`, and the
search is planned again on a new :class:`~.state.IndexState` (never by changing the old one):

- :class:`AliasMoved`: hits came from an index the searcher did not open, or the server refused
  the query vector's dimension, and the alias no longer holds the old index (a migration swapped
  it): the new index is read (its embedder, fields, default pipeline) and the query runs there;
- :class:`FusionRefused`: the cluster refused a fusion it was thought to run (Elasticsearch: 400
  unknown retriever, 403 licence): the capability goes, and the plan falls back, saying why;
- :class:`PaginationDepthRejected`: a Serverless collection refused the hybrid query's
  ``pagination_depth``: it is sent without it from then on (every result says so);
- :class:`PartialAnswer`: shards failed (a node leaving loses its search contexts), in a 200 that holds
  the other shards' hits, or in a refusal the request asked for (Elasticsearch's retrievers are sent with
  ``allow_partial_search_results=false``: they drop failed shards silently otherwise, elastic #157810):
  asked once more a moment later, when their other copies answer; still partial, the answer is used
  with a notice, or is a :class:`~adapter.errors.PartialResultError` where the search does not allow
  partial results (a refusal always is: it holds no hits);
- :class:`NodeLeft`: a request failed as a whole because a node was leaving (500 "Node not
  connected" while the cluster state still lists it): asked once more a moment later; failing
  again, the server's error is raised;
- :class:`EmptyShardRefused`: the empty shard a one-shard hybrid searches beside is missing or not
  ours to read: searched without it from then on;
- :class:`Overloaded`: the node's memory breaker refused the request at its door (429 "Data too
  large": its heap full for the moment, no work done): asked again after a growing pause, a
  bounded number of times, then the server's error is raised.

Each kind recovers at most ``tries`` times per search (once, but for :class:`Overloaded`).

One retry policy per request: the client's transport asks again what it retries itself (502, 503,
504 and timeouts on the adapter's clients; whatever a user's client is set to:
:attr:`adapter.engines.port.Cluster.retried_statuses`); a search recovers only from what the
transport does not ask again, so no status is retried by both (a 503 once reached the server 8
times: four transport tries, twice).

These signals are not errors: none derives from :class:`~adapter.errors.HybridError`, so a caller's
``except BackendError`` never catches one meant for the search itself. Each carries the error it
stands for (``error``: the server's, or one of the tree's), which :func:`run` raises when the
signal cannot be recovered from again.

The record of what a search sent is the last
attempt's, after the partially answered requests of an attempt asked again; a refused request is
not in it (it counts in ``SearchResult.requests``: it cost a round trip).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Callable, ClassVar, Generic, Sequence, TypeVar

from adapter import aio
from adapter.observability import telemetry
from adapter.engines.dsl import SentRequest
from adapter.engines.port import recording
from adapter.errors import BackendError, HybridError, IndexMismatchError, PartialResultError
from adapter.fusion import Fusion
from adapter.search.state import IndexState

T = TypeVar("T")
Follow = Callable[[IndexState, "AliasMoved"], IndexState]
PARTIAL_RETRY_PAUSE_S = 0.2  # a node leaving or joining: its shards' other copies answer a moment later


class Recover(Exception):
    """An attempt that must be planned again (caught by :func:`run`, never seen by callers);
    ``error`` is what the caller gets when it cannot be."""

    tries: ClassVar[int] = 1  # how many times one search recovers from this kind
    level: ClassVar[int] = logging.INFO  # how the recovery is logged (adapter.search): WARNING for a retry
    then: ClassVar[str] = "planning the search again"  # what happens next, for the log

    def __init__(self, error: HybridError) -> None:
        self.error = error
        super().__init__(str(error))

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        """The state and the attempt to run next (``sent``: what the ended attempt sent)."""
        raise NotImplementedError


class AliasMoved(Recover):
    then = "following the alias to its new index"

    def __init__(self, alias: str, old: str, new: Sequence[str]) -> None:
        self.old = old
        super().__init__(
            IndexMismatchError(f"the alias {alias} no longer points to {old} (hits came from {', '.join(new)})")
        )

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        return follow(state, self), attempt


class FusionRefused(Recover):
    then = "falling back to the next way of fusing (the result says which)"

    def __init__(self, fusion: Fusion, why: str, error: BackendError) -> None:
        self.fusion, self.why = fusion, why  # error: the server's refusal (a retriever it lacks, a licence)
        super().__init__(error)

    def __str__(self) -> str:
        return self.why

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        return (
            state.with_caps(state.caps.without(self.fusion)),
            replace(attempt, refused=self.why, spent_requests=attempt.spent_requests + len(sent)),
        )


class PaginationDepthRejected(Recover):
    then = "sending the hybrid query without pagination_depth from now on"

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        return state.with_caps(replace(state.caps, pagination_depth=False)), attempt


class PartialAnswer(Recover):
    level = logging.WARNING
    then = f"asking again in {PARTIAL_RETRY_PAUSE_S} s"

    def __init__(self, message: str, error: BackendError | None = None) -> None:
        super().__init__(error or PartialResultError(message, kind="shards"))

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        aio.pause(PARTIAL_RETRY_PAUSE_S)
        return state, replace(
            attempt, accept_partial=True, earlier=attempt.earlier + tuple(sent)
        )  # it was answered: listed


# How a coordinating node words a request it could not send to a node that is leaving (the Java
# exceptions NodeNotConnectedException, NodeDisconnectedException, NodeClosedException; the same in
# OpenSearch and Elasticsearch).
NODE_LEFT_REASONS = ("node not connected", "] disconnected", "node closed")


def node_left(error: BackendError) -> bool:
    reason = (error.reason or "").lower()
    return error.status in (500, 503) and any(r in reason for r in NODE_LEFT_REASONS)


class NodeLeft(Recover):
    """``error``: the server's, raised as it is when met a second time."""

    level = logging.WARNING
    then = f"asking again in {PARTIAL_RETRY_PAUSE_S} s"

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        aio.pause(PARTIAL_RETRY_PAUSE_S)
        return state, replace(
            attempt, spent_requests=attempt.spent_requests + len(sent)
        )  # the refused one is among them


class EmptyShardRefused(Recover):
    """The empty shard searched beside a one-shard index's hybrid (:meth:`.retrieve.Retriever.empty_shard`)
    is missing (404: never created, or deleted) or not the caller's to read (403): the state remembers,
    and the search runs again without it (the refused request counts: it cost a round trip)."""

    then = "searching without the empty shard"

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        return state, replace(attempt, spent_requests=attempt.spent_requests + len(sent))


OVERLOAD_PAUSE_S = 0.25  # the first pause after the memory breaker refused; doubled at each try


def overloaded(error: BackendError) -> bool:
    """The parent (or another) circuit breaker refused the request: 429 with "Data too large"."""
    return error.status == 429 and "data too large" in (error.reason or "").lower()


class Overloaded(Recover):
    """``error``: the server's, raised as it is once the tries are spent (pauses 0.25 + 0.5 + 1 + 2 + 4 s at
    most: with three, 16 searchers on a 1 GB heap beside a 1,000,000-character document still met the
    breaker 5 times in 2,645 searches; tests/reliability/test_big_documents)."""

    tries = 5
    level = logging.WARNING
    then = "asking again after a pause"

    def recovered(
        self, state: IndexState, attempt: Attempt, sent: Sequence[SentRequest], follow: Follow
    ) -> tuple[IndexState, Attempt]:
        aio.pause(OVERLOAD_PAUSE_S * 2 ** (attempt.met.count(Overloaded) - 1))
        return state, replace(attempt, spent_requests=attempt.spent_requests + len(sent))


@dataclass(frozen=True)
class Attempt:
    """How this attempt runs, from what the previous ones met."""

    accept_partial: bool = False  # use a partial answer, with a notice (the second time)
    refused: str | None = None  # why the cluster refused the fusion planned before (the fallback's notice)
    spent_requests: int = 0  # requests of earlier attempts that count in the result
    earlier: tuple[SentRequest, ...] = ()  # requests of earlier attempts the result lists (answered, partially)
    met: tuple[type[Recover], ...] = ()  # every kind recovered from so far, once per time


@dataclass(frozen=True)
class Outcome(Generic[T]):
    value: T
    state: IndexState
    attempt: Attempt
    sent: tuple[SentRequest, ...] = field(default=())


def run(once: Callable[[IndexState, Attempt], T], state: IndexState, follow: Follow) -> Outcome[T]:
    """``once(state, attempt)`` until it ends without a :class:`Recover`; ``follow`` reads the index
    the alias moved to. A kind met more than its ``tries`` is not recovered again: the error it
    stands for is raised (with its own cause: the server's answer), never the signal."""
    attempt = Attempt()
    while True:
        with recording() as sent:
            try:
                return Outcome(once(state, attempt), state, attempt, attempt.earlier + tuple(sent))
            except Recover as recover:
                if attempt.met.count(type(recover)) >= recover.tries:
                    raise recover.error from recover.error.__cause__
                telemetry.SEARCH.log(recover.level, "%s: %s; %s", type(recover).__name__, recover, recover.then)
                met = replace(attempt, met=attempt.met + (type(recover),))
                state, attempt = recover.recovered(state, met, sent, follow)
