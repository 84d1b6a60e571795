"""What a searcher knows of its index and cluster at one moment, as one immutable value.

A search reads the searcher's current :class:`IndexState` once and uses that value throughout, so
it never sees half of a change. What changes it (the alias moved to a new index, the cluster refused
a fusion, a Serverless collection refused ``pagination_depth``) produces a new state, which the
searcher publishes for the searches after; the old one stays whole for the searches still using it.

:class:`Memo` holds what was read of the cluster for one state (stored pipelines' fusions, the
clause limit, the alias's members): facts, each read once, never decisions a search makes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Callable, Generic, Hashable, Mapping, Sequence, TypeVar, Union

from adapter.engines.capabilities import Capabilities
from adapter.engines.dsl import TextLeg
from adapter.errors import IndexMismatchError, InputError
from adapter.fusion import DEFAULT_FUSION, Fusion, parse_fusion
from adapter.fusion.choice.policy import AdaptivePolicy, Calibration, stored_policy
from adapter.fusion.choice.values import ADAPTIVE
from adapter.fusion.relevance import RelevanceMap, maps_from_json
from adapter.index.catalog import IndexInfo
from adapter.models.embedders import Embedder, check_fingerprint, load_index_embedder
from adapter.search.fast_path import FastPathCheck

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# A hybrid search's fusion as given: a fusion, or a policy that chooses the weights per query.
HybridFusion = Union[Fusion, AdaptivePolicy]


def split_fusion(fusion: HybridFusion | None) -> tuple[Fusion | None, AdaptivePolicy | None]:
    """A fusion as given to a searcher: a fixed one, or a policy (the one place that tells them apart)."""
    return (None, fusion) if isinstance(fusion, AdaptivePolicy) else (fusion, None)


class Memo(Generic[K, T]):
    """Values computed once per key, safe across threads (a value may be computed twice in a race,
    never mixed)."""

    def __init__(self) -> None:
        self._values: dict[K, T] = {}
        self._lock = threading.Lock()

    def peek(self, key: K) -> T | None:
        """The value of ``key`` if one was computed (None: not yet)."""
        with self._lock:
            return self._values.get(key)

    def get(self, key: K, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = compute()
        with self._lock:
            return self._values.setdefault(key, value)


@dataclass(frozen=True)
class Given:
    """What the searcher's owner chose; everything else follows the index."""

    embedder: Embedder | None = None
    text_leg: TextLeg | None = None
    fusion: HybridFusion | None = None
    pipeline: str | None = None
    allowed_models: Sequence[str] | None = None


@dataclass(frozen=True, eq=False)
class IndexState:
    """The index (its newest version behind the alias), the cluster's capabilities and the defaults
    that follow from them. Never changed: :meth:`moved_to` and :meth:`with_caps` make new ones."""

    info: IndexInfo
    caps: Capabilities
    given: Given
    text_leg: TextLeg
    fusion: Fusion  # the fixed fusion of a hybrid search that names none
    adaptive: AdaptivePolicy | None  # ... unless a policy chooses its weights per query (then it does)
    pipeline: str | None  # the stored pipeline a hybrid search without a fusion runs
    policy: AdaptivePolicy  # the index's own (learned, else the default)
    calibration: Calibration | None
    fast_path: FastPathCheck | None  # the index's kept check of the fast path (taken where it applies)
    # _meta.relevance: fusion name -> its relevance map (adapter.fusion.relevance)
    relevance: Mapping[str, RelevanceMap]
    # why _meta.relevance could not be read (each search says so; relevances then by formula)
    relevance_problem: str | None
    pipelines: Memo[str, Fusion | None] = field(default_factory=Memo)  # stored pipeline -> its fusion (None: absent)
    # cluster settings read once (the clause limit), the empty shard refused
    facts: Memo[str, int] = field(default_factory=Memo)
    members: Memo[frozenset[str], bool] = field(default_factory=Memo)  # indices the alias served from: ours among them?
    embedders: Memo[str, Embedder] = field(default_factory=Memo)  # the index's embedder, loaded on first use
    switched: Memo[str, Capabilities] = field(default_factory=Memo)  # caps with the switching cluster settings read

    @classmethod
    def of(cls, info: IndexInfo, caps: Capabilities, given: Given) -> IndexState:
        """The state for ``info``: an adaptive index follows its policy, else the index's recorded
        fusion (Elasticsearch keeps it in ``_meta``) or default pipeline, else the product default."""
        info.check_meta(own_text_fields=given.text_leg is not None)
        if given.embedder is not None:
            check_fingerprint(info.alias, info.fingerprint, given.embedder)
        policy, calibration = stored_policy(info.adaptive)
        given_fixed, given_policy = split_fusion(given.fusion)
        follows_index = given.fusion is None and given.pipeline is None and info.default_fusion == ADAPTIVE
        adaptive = given_policy or (policy if follows_index else None)
        recorded = (
            parse_fusion(info.default_fusion) if info.default_fusion and info.default_fusion != ADAPTIVE else None
        )
        pipeline = given.pipeline or (info.default_pipeline if given.fusion is None and adaptive is None else None)
        maps, problem = _relevance_maps(info)
        return cls(
            info,
            caps,
            given,
            given.text_leg or TextLeg(info.query_fields),
            given_fixed or recorded or DEFAULT_FUSION,
            adaptive,
            pipeline,
            policy,
            calibration,
            FastPathCheck.from_meta(info.fast_path),
            maps,
            problem,
        )

    def moved_to(self, info: IndexInfo, *, query_vector_given: bool = False) -> IndexState:
        """The state once the alias points to ``info`` (a migration swapped it). A given embedder or
        query vector of another model than the new index's is refused: results never mix models."""
        changed = bool(info.fingerprint.differences(self.info.fingerprint))
        if changed and (self.given.embedder is not None or query_vector_given):
            whose = (
                "the query vector given"
                if query_vector_given
                else f"this searcher's embedder ({self.given.embedder.fingerprint.model})"
                if self.given.embedder
                else ""
            )
            raise IndexMismatchError(
                f"the alias {self.info.alias} moved from {self.info.index} to {info.index}, built with "
                f"{info.fingerprint.model}; {whose} belongs to the old index. Open a new searcher with the new model "
                f"(Searcher.open(client, {self.info.alias!r}, embedder))"
            )
        fresh = IndexState.of(info, self.caps, self.given)
        return fresh if changed else replace(fresh, embedders=self.embedders)

    def with_caps(self, caps: Capabilities) -> IndexState:
        return replace(self, caps=caps)

    @property
    def alias(self) -> str:
        return self.info.alias

    @property
    def default(self) -> HybridFusion:
        """What a hybrid search that names no fusion runs: the policy, else the fixed fusion."""
        return self.adaptive or self.fusion

    def embedder(self) -> Embedder:
        """The given embedder, else the index's (its spec must be on the allow-list), loaded once."""
        if self.given.embedder is not None:
            return self.given.embedder

        def load() -> Embedder:
            loaded = load_index_embedder(
                self.info.fingerprint.spec, allowed=self.given.allowed_models, index=self.alias
            )
            check_fingerprint(self.alias, self.info.fingerprint, loaded)
            return loaded

        return self.embedders.get(self.info.fingerprint.key, load)


def _relevance_maps(info: IndexInfo) -> tuple[dict[str, RelevanceMap], str | None]:
    """The index's relevance maps; one edited out of shape leaves none (each fusion's formula) and
    says why, rather than refusing every search of the index."""
    try:
        return maps_from_json(info.relevance), None
    except InputError as exc:
        return {}, (
            f"the index's relevance maps (_meta.relevance) are unreadable, so relevances come from each fusion's "
            f"formula: {exc}; run `hybrid calibrate --index {info.alias} --queries FILE` to fit them anew"
        )
