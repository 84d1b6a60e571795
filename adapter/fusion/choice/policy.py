"""Query-adaptive fusion: the legs' weights chosen for each query, without labels. Pure.

Fixed weights let a weak leg pull a good list down. What decides how much BM25 should count,
measured on every labelled set here (docs/EVALUATION.md), is how well BM25 *matches* the queries
of a corpus: on SciFact a claim's words are mostly found in its abstract, while a Spanish or
Polish paraphrase shares one word with an unrelated article ("¿cómo devuelvo un pedido?" ->
"Facturación", on *pedido*). The signals:

- **BM25 match quality** of a query (:func:`match_quality`): the BM25 leg's best score over the
  score of an ideal match, a document of average length holding every analysed query term once:
  ``top * (1 + k1) / sum_fields(boost * sum_terms(idf))``, with Lucene's
  ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` from the index's term statistics, on the scale of
  the legacy BM25 (OpenSearch 2.x; 3.x scores are rescaled, see :func:`match_quality`). About
  ``1 + k1``: the best hit holds the query's words; well below: it holds only some of them (or
  common ones).
- **Corpus prior** (:class:`Calibration`): the median match quality over a sample of the index's
  queries (the user's, never their judgments), computed once by ``hybrid calibrate``.
- **Query class** (:func:`adapter.fusion.choice.advise.classify`): exact-term (codes, identifiers, numbers,
  names) or natural language.

The policy (:class:`AdaptivePolicy`) turns them into the BM25 weight::

    logit(w_bm25) = bias + corpus * ln(q_corpus) + query * ln(q / q_corpus) + exact * [exact-term]

clipped to ``[min_weight, 1 - min_weight]`` (both legs always count) and rounded to ``step`` (so a
weight names one of a few stored pipelines). The dense leg gets ``1 - w_bm25``; the fusion is
min_max + arithmetic mean, run by the server. With ``query == 0`` the weight needs nothing but the
query text and the calibration: no request before the hybrid one. The untuned defaults were
chosen on the train splits of SciFact, soporte-es and wsparcie-pl (docs/EVALUATION.md);
:func:`fit_policy` learns a policy's parameters from judgments on a train split.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Iterator, Mapping, Sequence

import numpy as np

from adapter.errors import InputError
from adapter.fusion import Combination, Normalization, ScoreNormalization
from adapter.fusion.choice.advise import classify
from adapter.fusion.choice.asset import JsonAsset
from adapter.fusion.choice.defaults import measured_adaptive_base
from adapter.fusion.choice.values import FusionChoice

# 3: the better-leg guard's departure_weight and exact_departure (issue 31); 4: exact_by_words (issue 39)
POLICY_SCHEMA = 4
POLICY_KIND = "adaptive-fusion-policy"
BM25_K1 = 1.2  # OpenSearch's default BM25 k1: a score of top * (1 + k1) ~ idf for one average match


# -- signals ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldTerms:
    """The analysed query terms of one query field, with the field's statistics (``_termvectors``)."""

    field: str
    boost: float
    doc_count: int  # documents with this field
    terms: tuple[tuple[str, int, int], ...]  # (term, occurrences in the query, document frequency)


def idf(doc_count: int, df: int) -> float:
    """Lucene's BM25 idf."""
    return math.log(1.0 + (doc_count - df + 0.5) / (df + 0.5))


def ideal_score(fields: Sequence[FieldTerms], k1: float = BM25_K1) -> float:
    """The BM25 score of an average-length document holding every query term once, in the query
    field where that scores most (``boost * sum(idf)``; fields no document has are skipped).

    One field, not the sum over fields: a document that repeats its title in its body is not a
    better match, and the scale stays the same whether title and body are scored apart or as one
    combined field (``IndexSpec.text_layout``)."""
    ideals = [f.boost * sum(tf * idf(f.doc_count, df) for _, tf, df in f.terms) for f in fields if f.doc_count]
    return max(ideals, default=0.0) / (1.0 + k1)


def match_quality(
    top_score: float | None, fields: Sequence[FieldTerms], k1: float = BM25_K1, *, legacy_bm25: bool = True
) -> float | None:
    """BM25's best score over :func:`ideal_score`; 0 when BM25 found nothing; None without terms.

    The scale is that of the legacy BM25 (OpenSearch 2.x's default similarity), whose scores carry a
    ``(1 + k1)`` factor: a full match scores about ``1 + k1``. OpenSearch 3.x and Elasticsearch 8+
    score with Lucene's BM25 without that factor (``legacy_bm25=False``); their scores are put on the
    legacy scale first, so one calibration and one policy mean the same on every engine.
    """
    ideal = ideal_score(fields, k1)
    if ideal <= 0:
        return None
    score = max(0.0, float(top_score or 0.0)) * (1.0 if legacy_bm25 else 1.0 + k1)
    return score / ideal


@dataclass(frozen=True)
class QuerySignals:
    """What the policy knows about one query."""

    kind: str  # "exact" or "natural" (adapter.fusion.choice.advise.classify)
    reasons: tuple[str, ...] = ()  # why exact, e.g. ("code: E-4012",)
    match_quality: float | None = None  # None when the legs were not asked (prior mode)
    # The share of the query's words that hold an exact term (advise.QueryClass.exact_words); 1.0 unless
    # read from a text: a query known only by its class counts as all code.
    exact_words: float = 1.0

    @classmethod
    def of(cls, query: str, match_quality: float | None = None) -> QuerySignals:
        c = classify(query)
        return cls(c.kind, c.reasons, match_quality, c.exact_words)


@dataclass(frozen=True)
class Calibration:
    """How BM25 matches this index's queries, from a sample of them (query texts only, no labels)."""

    match_quality: float  # median BM25 match quality over the sample
    queries: int  # how many queries it was measured on (with at least one analysed term)
    dense_agreement: float | None = None  # share of BM25's full matches (quality >= 0.8) in the dense top 10
    source: str = ""  # where the queries came from
    # Median share of a query's analysed terms the index holds (adapter.fusion.choice.signals.term_coverage);
    # None in calibrations made before it was measured.
    coverage: float | None = None
    # Share of the calibration queries that carry codes or identifiers (adapter.fusion.choice.advise): what
    # BM25 matches exactly whatever the vocabulary gap; None in calibrations made before issue 31.
    exact_share: float | None = None

    def __post_init__(self) -> None:
        if not (self.match_quality >= 0 and math.isfinite(self.match_quality)):
            raise InputError(f"a calibration's match quality must be a finite number >= 0, got {self.match_quality!r}")
        if self.queries < 1:
            raise InputError("a calibration needs at least one query")
        for name in ("coverage", "exact_share"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                raise InputError(f"a calibration's {name.replace('_', ' ')} must be in [0, 1], got {value!r}")

    def to_meta(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> Calibration | None:
        if not meta:
            return None
        try:
            return cls(
                float(meta["match_quality"]),
                int(meta["queries"]),
                None if meta.get("dense_agreement") is None else float(meta["dense_agreement"]),
                str(meta.get("source", "")),
                None if meta.get("coverage") is None else float(meta["coverage"]),
                None if meta.get("exact_share") is None else float(meta["exact_share"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"the index's adaptive calibration is unreadable ({exc}); run `hybrid calibrate` again"
            ) from exc


def calibrate(
    qualities: Sequence[float | None],
    *,
    coverages: Sequence[float | None] = (),
    dense_hits: Sequence[bool] = (),
    source: str = "",
    texts: Sequence[str] = (),
) -> Calibration:
    """The :class:`Calibration` of per-query match qualities (None: a query without analysed terms)
    and term coverages (:func:`adapter.fusion.choice.signals.term_coverage`; none given: not measured).

    ``dense_hits``: for each query whose BM25 match was full (quality >= 0.8), whether the dense
    leg's top 10 held BM25's best hit; a diagnostic of the dense leg, not an input of the weights.
    ``texts``: the queries themselves, for the share that carries codes or identifiers (the guard's evidence).
    """
    values = [q for q in qualities if q is not None]
    if not values:
        raise InputError("no calibration query had an analysed term; give queries in the index's language")
    covered = [c for c in coverages if c is not None]
    agreement = float(np.mean(dense_hits)) if len(dense_hits) else None
    exact = float(np.mean([classify(t).kind == "exact" for t in texts])) if texts else None
    return Calibration(
        float(np.median(values)), len(values), agreement, source, float(np.median(covered)) if covered else None, exact
    )


# -- the policy ------------------------------------------------------------------------------------
def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


PARAMETERS = (
    "bias",
    "corpus",
    "query",
    "exact",
    "uncalibrated_quality",
    "min_weight",
    "step",
    "coverage_start",
    "coverage_full",
    "sample_queries",
    "min_queries",
    "departure_weight",
    "exact_departure",
    "exact_by_words",
)
NORMALIZATIONS = ("auto", Normalization.MIN_MAX.value, Normalization.Z_SCORE.value)


@dataclass(frozen=True)
class AdaptivePolicy(JsonAsset):
    """Per-query fusion weights from :class:`QuerySignals` and a :class:`Calibration` (module docstring)."""

    FILE: ClassVar[str] = "the policy file"
    FILE_HOLDS: ClassVar[str] = "an adaptive fusion policy"
    FILE_KIND: ClassVar[str] = POLICY_KIND
    FILE_SCHEMA: ClassVar[int] = POLICY_SCHEMA

    # The logit part: 0 -> 0.5 / 0.5. The corpus slope on ln(match quality) is off by default: match
    # quality falls with query length whatever BM25's strength (issue 18); learned policies may use it.
    bias: float = 0.0
    corpus: float = 0.0  # slope on ln(corpus match quality)
    query: float = 0.0  # slope on ln(query quality / corpus quality); != 0 costs a request per query
    exact: float = 0.0  # shift for exact-term queries
    uncalibrated_quality: float = 2.12  # assumed without a calibration (only matters with corpus != 0)
    min_weight: float = 0.1  # neither leg is ever silenced
    step: float = 0.05  # weights are rounded to this grid
    # The departure from the baseline towards the dense leg, with a confidence in [0, 1]: none while
    # the calibration's term coverage is at or above coverage_start, full at coverage_full, shrunk by
    # the sample's size (n / (n + sample_queries)), and none from fewer than min_queries queries.
    # coverage_start <= coverage_full: off. Chosen by leave-one-set-out (docs/EVALUATION.md).
    coverage_start: float = 0.85
    coverage_full: float = 0.75
    sample_queries: float = 0.0
    min_queries: float = 10.0  # a guard, not tuned: a handful of queries says nothing about a corpus
    # The better-leg guard (issue 31): where the departure goes at full confidence, and how far an
    # exact-term query follows it. A vocabulary gap (the evidence of the departure) is about words,
    # not codes: BM25 still matches a code exactly where the dense leg blurs look-alikes, and for the
    # rest of the queries BM25 then adds noise, not recall (departure_weight 0: the dense leg alone).
    # departure_weight None (min_weight) and exact_departure 1: the policy of issue 18 (ISSUE18_POLICY).
    departure_weight: float | None = None
    exact_departure: float = 1.0
    # Issue 39: 1 makes an exact-term query also follow the departure by the share of its words that are
    # not exact terms (a code inside a sentence of words BM25 cannot reach is one word of many); 0: by
    # exact_departure alone. Chosen by leave-one-set-out (docs/EVALUATION.md, "code-heavy corpora").
    exact_by_words: float = 0.0
    normalization: str = "auto"  # the base fusion: z_score where the cluster runs it (3.0+), else min_max
    name: str = "adaptive"
    trained_on: Mapping[str, Any] | None = field(default=None, compare=False)  # learned policies: where

    def __post_init__(self) -> None:
        for attr in (
            "bias",
            "corpus",
            "query",
            "exact",
            "coverage_start",
            "coverage_full",
            "sample_queries",
            "min_queries",
        ):
            if not math.isfinite(getattr(self, attr)):
                raise InputError(f"policy parameter {attr} must be a finite number, got {getattr(self, attr)!r}")
        if not 0 < self.uncalibrated_quality:
            raise InputError(f"uncalibrated_quality must be > 0, got {self.uncalibrated_quality}")
        if not 0 < self.min_weight < 0.5:
            raise InputError(f"min_weight must be in (0, 0.5), got {self.min_weight}")
        if not 0 < self.step <= 0.5 or abs(round(1 / self.step) * self.step - 1) > 1e-9:
            raise InputError(f"step must divide 1 (0.05, 0.1, ...), got {self.step}")
        if self.sample_queries < 0:
            raise InputError(f"sample_queries must be >= 0, got {self.sample_queries}")
        if self.departure_weight is not None and not 0 <= self.departure_weight <= self.min_weight:
            raise InputError(
                f"departure_weight must be in [0, min_weight ({self.min_weight})], got {self.departure_weight}"
            )
        if not 0 <= self.exact_departure <= 1:
            raise InputError(f"exact_departure must be in [0, 1], got {self.exact_departure}")
        if not 0 <= self.exact_by_words <= 1:
            raise InputError(f"exact_by_words must be in [0, 1], got {self.exact_by_words}")
        if self.normalization not in NORMALIZATIONS:
            raise InputError(
                f"unknown policy normalization {self.normalization!r}; expected one of {', '.join(NORMALIZATIONS)}"
            )

    @property
    def uses_legs(self) -> bool:
        """Whether the weight needs the query's BM25 match quality (a request before the hybrid one)."""
        return self.query != 0

    @property
    def departs(self) -> bool:
        """Whether the policy can leave the baseline on corpus evidence (term coverage)."""
        return self.coverage_start > self.coverage_full

    def confidence(self, calibration: Calibration | None) -> float:
        """How sure the corpus evidence is that BM25 is the weaker leg, in [0, 1]: the shortfall of
        term coverage below ``coverage_start`` (full at ``coverage_full``) times the sample's weight."""
        if (
            not self.departs
            or calibration is None
            or calibration.coverage is None
            or calibration.queries < self.min_queries
        ):
            return 0.0
        strength = (self.coverage_start - calibration.coverage) / (self.coverage_start - self.coverage_full)
        sample = calibration.queries / (calibration.queries + self.sample_queries)
        return min(max(strength, 0.0), 1.0) * sample

    def weight(self, signals: QuerySignals, calibration: Calibration | None = None) -> tuple[float, dict[str, float]]:
        """The BM25 weight (on the ``step`` grid) and the terms it was made of, by name."""
        corpus_q = calibration.match_quality if calibration else self.uncalibrated_quality
        terms = {"bias": self.bias}
        if self.corpus:
            terms["corpus"] = self.corpus * math.log(max(corpus_q, 0.01))
        if self.query and signals.match_quality is not None:
            terms["query"] = self.query * math.log(max(signals.match_quality, 0.01) / max(corpus_q, 0.01))
        if self.exact and signals.kind == "exact":
            terms["exact"] = self.exact
        raw = 1.0 / (1.0 + math.exp(-sum(terms.values())))
        confidence = self.confidence(calibration)
        terms["confidence"] = confidence
        follows = self.follows(signals)  # the guard: codes keep BM25
        floor = self.floor
        raw += confidence * follows * (floor - raw)  # shrunk towards the baseline as the evidence weakens
        steps = round(1 / self.step)
        w = round(round(min(max(raw, floor), 1.0 - self.min_weight) * steps) / steps, 6)
        return min(max(w, floor), 1.0 - self.min_weight), terms

    def follows(self, signals: QuerySignals) -> float:
        """How far a query follows the departure, in [0, 1]: a natural-language query all the way; an
        exact-term one by ``exact_departure``, and with ``exact_by_words`` also by its share of words
        that are not exact terms (what the vocabulary gap, the departure's evidence, is about)."""
        if signals.kind != "exact":
            return 1.0
        words = self.exact_by_words * (1.0 - min(max(signals.exact_words, 0.0), 1.0))
        return self.exact_departure + (1.0 - self.exact_departure) * words

    @property
    def floor(self) -> float:
        """The lowest BM25 weight: where a full departure goes (min_weight unless the guard lowers it)."""
        return self.min_weight if self.departure_weight is None else self.departure_weight

    def bare_weights(self, calibration: Calibration | None) -> tuple[float, float]:
        """The weights for a query whose class is not known (a bare hybrid query from another client,
        through the stored pipeline): with the guard acting, the calibration's mix of exact-term and
        natural-language queries (each class's BM25 weight, weighted by its share, on the grid);
        otherwise what any query gets."""
        natural, _ = self.weight(QuerySignals("natural"), calibration)
        share = calibration.exact_share if calibration is not None else None
        if not self.per_query(calibration) or self.query or self.exact:
            return natural, round(1.0 - natural, 6)
        if share is None:  # calibrated before the mix was kept: BM25 at its floor of before the guard, not silenced
            w = max(natural, self.min_weight)
            return w, round(1.0 - w, 6)
        exact, _ = self.weight(QuerySignals("exact"), calibration)
        steps = round(1 / self.step)
        w = round(round((share * exact + (1.0 - share) * natural) * steps) / steps, 6)
        return w, round(1.0 - w, 6)

    def per_query(self, calibration: Calibration | None) -> bool:
        """Whether the weights depend on the query (else every query of the index gets the same)."""
        return bool(self.query or self.exact or (self.exact_departure != 1.0 and self.confidence(calibration) > 0))

    def _corpus_reason(self, calibration: Calibration | None, confidence: float) -> str:
        if not self.departs:
            return "corpus evidence not used by this policy"
        if calibration is None:
            return "corpus: not calibrated (run `hybrid calibrate`): the baseline weights"
        if calibration.coverage is None:
            return (
                "corpus: calibrated before term coverage was measured (run `hybrid calibrate` again): "
                "the baseline weights"
            )
        if calibration.queries < self.min_queries:
            return (
                f"corpus: calibrated on {calibration.queries} queries, fewer than {self.min_queries:g}: too few to "
                "depart from the baseline (confidence 0.00)"
            )
        share = 1.0 - calibration.coverage
        where = f"median of {calibration.queries} calibration queries"
        if confidence <= 0:
            return (
                f"corpus: {share:.0%} of a query's terms are missing from the index ({where}): no evidence that a leg "
                f"is weaker (a departure starts above {1 - self.coverage_start:.0%}), confidence 0.00: the baseline"
            )
        return (
            f"corpus: {share:.0%} of a query's terms are missing from the index ({where}): BM25 cannot match them, "
            f"confidence {confidence:.2f} that BM25 is the weaker leg (full at {1 - self.coverage_full:.0%} missing) "
            "-> more dense"
        )

    def choose(
        self, signals: QuerySignals, calibration: Calibration | None = None, *, z_score: bool = False
    ) -> FusionChoice:
        """The weights for one query and why (``z_score``: whether the cluster runs it, for the base)."""
        w, terms = self.weight(signals, calibration)
        weights = (w, round(1.0 - w, 6))
        confidence = terms.pop("confidence")
        base = self.base(z_score)
        reasons = [
            f"baseline {base.value} 0.50 / 0.50 (the measured default; docs/EVALUATION.md)",
            self._corpus_reason(calibration, confidence),
        ]
        if "corpus" in terms:
            reasons.append(
                "corpus: BM25 match quality "
                f"{calibration.match_quality if calibration else self.uncalibrated_quality:.2f} -> logit "
                f"{terms['corpus']:+.2f}"
            )
        if "query" in terms:
            lean = "more" if terms["query"] > 0 else "less"
            reasons.append(
                f"query: BM25's best hit matches {signals.match_quality:.2f} of an ideal match -> {lean} BM25"
            )
        if "exact" in terms:
            lean = "more" if terms["exact"] > 0 else "less"
            reasons.append(f"query: exact-term ({'; '.join(signals.reasons[:3])}) -> {lean} BM25")
        per_query = self.per_query(calibration)
        if per_query and confidence > 0 and self.exact_departure != 1.0:
            reasons.append(self._guard_reason(signals, confidence))
        per = "this query" if per_query else "every query of this index (no per-query term)"
        reasons.append(f"weights bm25 {weights[0]:.2f} / dense {weights[1]:.2f} for {per} ({self.name})")
        features = {"logit_" + k: round(v, 4) for k, v in terms.items()}
        if signals.match_quality is not None:
            features["match_quality"] = round(signals.match_quality, 4)
        features["corpus_match_quality"] = round(
            calibration.match_quality if calibration else self.uncalibrated_quality, 4
        )
        if calibration is not None and calibration.coverage is not None:
            features["corpus_coverage"] = round(calibration.coverage, 4)
        return FusionChoice(
            weights,
            tuple(reasons),
            self.name,
            features,
            signals.kind,
            confidence=round(confidence, 4),
            normalization=base.value,
            per_query=per_query,
        )

    def _guard_reason(self, signals: QuerySignals, confidence: float) -> str:
        if signals.kind == "exact":
            share = self.follows(signals)
            kept = "keeps the baseline" if share == 0 else f"follows {share:.0%} of the departure"
            if self.exact_by_words and share > self.exact_departure:
                kept += f" ({1 - signals.exact_words:.0%} of its words are not exact terms)"
            return (
                f"guard: an exact-term query ({'; '.join(signals.reasons[:2])}) {kept}: BM25 matches codes the "
                "vocabulary gap does not touch"
            )
        return (
            f"guard: a natural-language query follows the departure (bm25 {self.floor:.2f} at full confidence, "
            f"{confidence:.2f} here): BM25 matches only part of its words"
        )

    def base(self, z_score: bool) -> Normalization:
        """The base normalisation on a cluster that does (``z_score``) or does not run z_score.
        ``auto``: min_max without z_score; with it, the one the measured selection chose for such
        clusters (adapter.fusion.choice.defaults: the ``hybrid-adaptive`` row runs z_score, ``hybrid-adaptive-min_max``
        min_max)."""
        if self.normalization != "auto":
            return Normalization(self.normalization)
        if not z_score:
            return Normalization.MIN_MAX
        return measured_adaptive_base()

    def fusion(self, choice: FusionChoice) -> ScoreNormalization:
        """The server fusion that runs a choice: its base normalisation + arithmetic mean with its weights."""
        return ScoreNormalization(Normalization(choice.normalization), Combination.ARITHMETIC_MEAN, choice.weights)

    # -- the versioned asset ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        params = {k: getattr(self, k) for k in PARAMETERS}
        return {
            **self.header(),
            "name": self.name,
            "parameters": params,
            "normalization": self.normalization,
            "trained_on": dict(self.trained_on) if self.trained_on else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AdaptivePolicy:
        schema = cls.schema_of(data)
        params = dict(data.get("parameters") or {})
        unknown = set(params) - set(PARAMETERS[: {1: 7, 2: 11, 3: 13}.get(schema, len(PARAMETERS))])
        if unknown:
            raise InputError(f"unknown policy parameters {sorted(unknown)}")
        if schema == 1:
            # Schema 1 (before issue 18): min_max, the logit of match quality, no coverage departure;
            # its parameters' defaults were those of the policy of that time.
            params = {"bias": -1.5, "corpus": 2.0, **params, "coverage_start": 0.0, "coverage_full": 0.0}
            normalization = Normalization.MIN_MAX.value
        else:
            normalization = str(data.get("normalization", "auto"))
        if schema in (1, 2):  # written before the guard: they keep meaning what they meant (no guard)
            params = {**params, "departure_weight": None, "exact_departure": 1.0}
        try:
            values: dict[str, Any] = {
                k: None if v is None and k == "departure_weight" else float(v) for k, v in params.items()
            }
            return cls(
                **values,
                normalization=normalization,
                name=str(data.get("name", "adaptive")),
                trained_on=data.get("trained_on"),
            )
        except (TypeError, ValueError) as exc:
            raise InputError(f"policy parameters must be numbers: {exc}") from exc


@dataclass(frozen=True)
class LegEvidence:
    """What the calibration says about each leg, and the better-leg guard's decision (``hybrid calibrate``).

    BM25's strength is estimated by its **reach**: the share of a query's analysed terms the index
    holds at all (a term it does not hold, BM25 can never match), and the share of queries with
    codes or identifiers, which BM25 matches exactly. The dense leg has no such label-free measure:
    it is judged the stronger one where BM25 cannot reach the queries' words, with the policy's
    confidence in that (:meth:`AdaptivePolicy.confidence`)."""

    bm25_reach: float | None
    exact_share: float | None
    queries: int
    stronger: str  # "dense" (for natural-language queries) or "neither"
    confidence: float
    natural: tuple[float, float]  # the weights a natural-language query gets
    exact: tuple[float, float]  # the weights an exact-term query gets
    min_queries: float = 0.0  # fewer calibration queries than this say nothing (the policy's)
    exact_by_words: float = 0.0  # the policy's: a code among other words follows the departure by their share

    def lines(self) -> list[str]:
        reach = (
            "not measured (calibrate again)"
            if self.bm25_reach is None
            else f"{self.bm25_reach:.0%} of a query's analysed terms"
        )
        codes = (
            "" if self.exact_share is None else f"; {self.exact_share:.0%} of the queries carry codes or identifiers"
        )
        out = [
            f"bm25: reaches {reach} (median of {self.queries} queries){codes}",
            "dense: no label-free measure of its own; the stronger leg where BM25 cannot reach the queries' words",
        ]
        if self.stronger == "dense":
            alone = " (the dense leg alone)" if self.natural[0] == 0 else ""
            words = "; a code among other words moves towards the first by their share" if self.exact_by_words else ""
            out.append(
                "guard: dense estimated the stronger leg for natural-language queries, confidence "
                f"{self.confidence:.2f}: they get bm25 {self.natural[0]:.2f} / dense {self.natural[1]:.2f}{alone}; "
                f"exact-term queries bm25 {self.exact[0]:.2f} / dense {self.exact[1]:.2f}{words}"
            )
        else:
            few = (
                f"; {self.queries} calibration queries, fewer than {self.min_queries:g}"
                if self.queries < self.min_queries
                else ""
            )
            out.append(
                f"guard: no evidence that one leg dominates (confidence {self.confidence:.2f}{few}): every query gets "
                f"bm25 {self.natural[0]:.2f} / dense {self.natural[1]:.2f}"
            )
        return out


def leg_evidence(policy: AdaptivePolicy, calibration: Calibration, *, z_score: bool = False) -> LegEvidence:
    """The evidence behind ``policy``'s weights on an index with ``calibration``, and its guard's decision."""
    natural = policy.choose(QuerySignals("natural"), calibration, z_score=z_score)
    exact = policy.choose(QuerySignals("exact", ("code",)), calibration, z_score=z_score)
    confidence = policy.confidence(calibration)
    return LegEvidence(
        calibration.coverage,
        calibration.exact_share,
        calibration.queries,
        "dense" if confidence > 0 else "neither",
        confidence,
        (natural.weights[0], natural.weights[1]),
        (exact.weights[0], exact.weights[1]),
        policy.min_queries,
        policy.exact_by_words,
    )


# The better-leg guard at the parameters the selection rule picked on every labelled set (issue 31;
# docs/EVALUATION.md, round 3: "min_max-0.05-codes-kept"): a full departure gives a natural-language
# query bm25 0.05, a bare code keeps the baseline; and (issue 39, "code-heavy corpora": candidate P) a
# code among other words follows the departure by the share of those words.
DEFAULT_POLICY = AdaptivePolicy(departure_weight=0.05, exact_departure=0.0, exact_by_words=1.0)
# without the guard
ISSUE18_POLICY = AdaptivePolicy(departure_weight=None, exact_departure=1.0, name="adaptive-issue18")


def stored_policy(meta: Mapping[str, Any] | None) -> tuple[AdaptivePolicy, Calibration | None]:
    """The policy and calibration an index keeps in ``_meta.adaptive`` (the default policy if none)."""
    meta = meta or {}
    policy = AdaptivePolicy.from_json(meta["policy"]) if meta.get("policy") else DEFAULT_POLICY
    return policy, Calibration.from_meta(meta.get("calibration"))


def corpus_fusion(meta: Mapping[str, Any] | None, *, z_score: bool = False) -> ScoreNormalization:
    """The fusion a query without per-query signals gets from an index's policy and calibration
    (``z_score``: whether the cluster runs it): what its stored ``<alias>-adaptive`` pipeline runs
    for clients that send a bare hybrid query."""
    policy, calibration = stored_policy(meta)
    return policy.fusion(policy.choose(QuerySignals("natural"), calibration, z_score=z_score)).with_weights(
        policy.bare_weights(calibration)
    )


# -- learning from judgments -----------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    """One judged training query: its signals and the nDCG@10 its fused list reaches at each weight
    of ``grid`` (computed with the server's formula, :func:`adapter.fusion.fuse`)."""

    signals: QuerySignals
    gains: tuple[float, ...]


def weight_grid(step: float) -> tuple[float, ...]:
    steps = round(1 / step)
    return tuple(round(i / steps, 6) for i in range(steps + 1))


def example_scores(
    policy: AdaptivePolicy, examples: Sequence[Example], calibration: Calibration | None, grid: Sequence[float]
) -> list[float]:
    """The nDCG@10 the policy reaches on each of ``examples``, in order (weights read off ``grid``):
    what a paired test of two policies compares."""
    index = {round(w, 6): i for i, w in enumerate(grid)}
    return [_example_score(policy, ex, calibration, index) for ex in examples]


def score_policy(
    policy: AdaptivePolicy, examples: Sequence[Example], calibration: Calibration | None, grid: Sequence[float]
) -> float:
    """Mean nDCG@10 the policy reaches on ``examples`` (weights read off ``grid``)."""
    total = 0.0
    for score in example_scores(policy, examples, calibration, grid):
        total += score
    return total / len(examples) if examples else 0.0


BIAS_OFFSETS = tuple(x / 4 for x in range(-12, 13))  # -3 .. 3
QUERY_SLOPES = (0.25, 0.5, 1.0)
EXACT_SHIFTS = (-3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0)
# What a learned policy may change, from least to most (each family also keeps the others' values).
FAMILIES = {
    "untuned": {},
    "weight": {"bias": BIAS_OFFSETS},
    "class": {"bias": BIAS_OFFSETS, "exact": EXACT_SHIFTS},
    "query": {"bias": BIAS_OFFSETS, "query": QUERY_SLOPES, "exact": (0.0, *EXACT_SHIFTS)},
}


def _candidates(base: AdaptivePolicy, family: str) -> Iterator[AdaptivePolicy]:
    space = FAMILIES[family]
    for offset in space.get("bias", (0.0,)):
        for slope in space.get("query", (base.query,)):
            for shift in space.get("exact", (base.exact,)):
                yield replace(base, bias=base.bias + offset, query=slope, exact=shift)


def _fit(
    base: AdaptivePolicy,
    family: str,
    examples: Sequence[Example],
    calibration: Calibration | None,
    grid: Sequence[float],
) -> tuple[AdaptivePolicy, float]:
    """The family's best candidate on ``examples``; ties go to the one closest to ``base``."""
    best, best_key = base, (float("-inf"), 0.0)
    for cand in _candidates(base, family):
        score = score_policy(cand, examples, calibration, grid)
        distance = abs(cand.bias - base.bias) + abs(cand.query - base.query) + abs(cand.exact - base.exact)
        key = (round(score, 9), -distance)
        if key > best_key:
            best, best_key = cand, key
    return best, best_key[0]


@dataclass(frozen=True)
class Learned:
    """A learned policy and how its family was chosen."""

    policy: AdaptivePolicy
    family: str
    train_score: float  # mean nDCG@10 on the whole train split
    cross_validated: Mapping[str, float]  # family -> mean nDCG@10 on held-out folds of the train split


def _example_score(
    policy: AdaptivePolicy, ex: Example, calibration: Calibration | None, index: Mapping[float, int]
) -> float:
    return ex.gains[index[round(policy.weight(ex.signals, calibration)[0], 6)]]


def learn_policy(
    base: AdaptivePolicy,
    examples: Sequence[Example],
    calibration: Calibration | None,
    *,
    grid: Sequence[float] | None = None,
    folds: int = 2,
    name: str = "learned",
    trained_on: Mapping[str, Any] | None = None,
    families: Sequence[str] = tuple(FAMILIES),
) -> Learned:
    """Learn a policy from judged train queries without trusting noise.

    Each family of parameters (:data:`FAMILIES`: none, the corpus weight, + the exact-term shift,
    + the per-query slope) is scored by ``folds``-fold cross-validation *within the train split*
    (fit on the other folds, score each held-out query; folds interleave the queries). The simplest
    family whose held-out nDCG@10 is within one standard error of the best family's (the paired
    per-query difference; the "one-standard-error rule", Hastie, Tibshirani & Friedman, *Elements
    of Statistical Learning* 7.10) wins and is refitted on the whole split, so a flat or noisy train
    split keeps the untuned defaults."""
    if not examples:
        raise InputError("no judged queries to learn the fusion policy from")
    if folds < 2 or len(examples) < folds:
        raise InputError(f"cross-validation needs at least {max(folds, 2)} judged queries and 2 folds")
    grid = tuple(grid or weight_grid(base.step))
    index = {round(w, 6): i for i, w in enumerate(grid)}
    held_out: dict[str, list[float]] = {}
    for family in families:
        scores = [0.0] * len(examples)
        for i in range(folds):
            rest = [ex for j, ex in enumerate(examples) if j % folds != i]
            fitted, _ = _fit(base, family, rest, calibration, grid)
            for j in range(i, len(examples), folds):
                scores[j] = _example_score(fitted, examples[j], calibration, index)
        held_out[family] = scores
    cv = {f: float(np.mean(s)) for f, s in held_out.items()}
    best = max(families, key=lambda f: (round(cv[f], 9), -list(FAMILIES).index(f)))
    family = best
    for f in sorted(families, key=list(FAMILIES).index):  # simplest first
        diff = np.asarray(held_out[best]) - np.asarray(held_out[f])
        se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
        if cv[best] - cv[f] <= se:
            family = f
            break
    fitted, score = _fit(base, family, examples, calibration, grid)
    return Learned(replace(fitted, name=name, trained_on=trained_on), family, score, cv)
