"""``hybrid advise``: the seeds' decision rule made a tool. Pure: no cluster, no model.

Each query is classified as natural language or exact-term. Exact terms are what BM25 finds and
embeddings blur: codes (E-4012, CVE-2024-3094), identifiers mixing letters and digits (BRCA1,
gpt4o), names with a case change inside (CrashLoopBackOff, OOMKilled, getElementById, LifoQueue), snake_case
identifiers (put_nowait) and dotted names (os.path.splitext), acronyms (HIV; not everyday ones such as RAM
or PDF), numbers of three or more digits (#8821, 2019), versions (3.5.0, v2),
quoted phrases, e-mail addresses, URLs and paths, and proper names (a capitalised word that does
not start the sentence). The rule: >= 30% exact-term queries -> hybrid; else >= 80% natural
language -> dense first; anything in between is mixed -> hybrid.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from adapter.errors import InputError

EXACT_SHARE_FOR_HYBRID = 0.30
NATURAL_SHARE_FOR_DENSE = 0.80

_PATTERNS = (
    ("code", re.compile(r"\b[A-Za-z]{1,6}-\d{2,}(?:-\d+)*\b")),
    ("version", re.compile(r"\b[vV]?\d+(?:\.\d+){1,3}\b|\b[vV]\d+\b")),
    ("quoted phrase", re.compile(r"\"[^\"]{2,}\"|«[^»]{2,}»|“[^”]{2,}”|'[^']{3,}'")),
    ("e-mail or URL", re.compile(r"\S+@\S+\.\w+|https?://\S+|\bwww\.\S+")),
    ("path", re.compile(r"(?:^|\s)(?:/[\w.-]+){2,}|\b\w+\.(?:py|js|json|yaml|yml|txt|md|csv|exe|dll|log)\b")),
    ("number", re.compile(r"#\d+|\b\d{1,3}(?:,\d{3})+\b|\b\d{3,}\b")),
    ("identifier", re.compile(r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]{3,}\b")),
    # A case change inside a word: CrashLoopBackOff, OOMKilled, getItem (a name in code or logs, wherever it stands).
    ("identifier", re.compile(r"\b[A-Za-z]*(?:[a-z][A-Z]|[A-Z]{2}[a-z])[A-Za-z]*\b")),
    # snake_case code identifiers (put_nowait, HTTP_PROXY).
    ("identifier", re.compile(r"\b[A-Za-z][A-Za-z\d]*(?:_[A-Za-z\d]+)+\b")),
    ("dotted name", re.compile(r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+\b")),
    ("acronym", re.compile(r"\b[A-Z]{2,}s?\b")),
)
# Acronyms of everyday language, which embeddings know as well as any word ("too much RAM", "a PDF invoice"):
# not exact terms. An acronym of a field (HIV, BRCA) or an error name (ECONNREFUSED) still is.
_COMMON_ACRONYMS = {
    "RAM",
    "CPU",
    "GPU",
    "PDF",
    "USB",
    "URL",
    "API",
    "SSD",
    "HDD",
    "DNS",
    "VPN",
    "OS",
    "PC",
    "TV",
    "ID",
    "FAQ",
    "PIN",
    "SMS",
    "IT",
    "AI",
    "UI",
    "OK",
    "IP",
    "WIFI",
    "GPS",
    "ATM",
    "DVD",
    "CD",
    "EU",
    "US",
    "UK",
}
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
# Capitalised words that are not names even mid-sentence.
_NOT_NAMES = {"I", "I'm", "I've", "OK"}


@dataclass(frozen=True)
class QueryClass:
    text: str
    kind: str  # "exact" or "natural"
    reasons: tuple[str, ...]  # e.g. ("code: E-4012",)
    # The share of the query's words (whitespace-separated) that hold an exact term: 1.0 for a bare
    # `E-4012`, 1/3 for `router pokazuje R-561`, 0.0 for a natural-language query.
    exact_words: float = 0.0


@lru_cache(maxsize=4096)
def classify(query: str) -> QueryClass:
    """``query``'s kind: ``exact`` (codes, acronyms, names: words BM25 matches as written) or ``natural``.
    Cached per text (an immutable answer; every adaptive search asks it, ~0.1 ms a query)."""
    reasons = []
    spans = []  # where the exact terms stand, for the share of the query's words they take
    for label, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            token = match.group(0).strip()
            if label == "acronym" and (len(token.rstrip("s")) < 2 or token.rstrip("s") in _COMMON_ACRONYMS):
                continue
            reasons.append(f"{label}: {token}")
            spans.append(match.span())
    words = _WORD.findall(query)
    for i, word in enumerate(words):
        at = query.find(word)
        previous = query[:at].rstrip()
        sentence_start = i == 0 or previous.endswith((".", "!", "?", "¿", "¡", ":"))
        if not sentence_start and word[:1].isupper() and not word.isupper() and word not in _NOT_NAMES:
            reasons.append(f"proper name: {word}")
            spans.append((at, at + len(word)))
    unique = tuple(dict.fromkeys(reasons))
    return QueryClass(query, "exact" if unique else "natural", unique, _exact_words(query, spans))


def _exact_words(query: str, spans: list[tuple[int, int]]) -> float:
    """The share of ``query``'s whitespace-separated words (those with a letter or digit) that overlap an exact term."""
    tokens = [m.span() for m in re.finditer(r"\S+", query) if any(ch.isalnum() for ch in m.group(0))]
    if not tokens:
        return 0.0
    exact = sum(1 for a, b in tokens if any(s < b and a < e for s, e in spans))
    return exact / len(tokens)


@dataclass(frozen=True)
class Advice:
    queries: tuple[QueryClass, ...]
    natural_share: float
    exact_share: float
    recommendation: str  # "dense" or "hybrid"
    reason: str

    def matches(self, family: str) -> bool:
        """Whether a measured best technique's family (bm25, dense, hybrid) agrees with the recommendation."""
        return family == self.recommendation


def advise(queries: Iterable[str]) -> Advice:
    classes = tuple(classify(q) for q in queries if q and q.strip())
    if not classes:
        raise InputError("no queries to advise on; give a file with one query per line (or BEIR queries.jsonl)")
    exact = sum(1 for c in classes if c.kind == "exact") / len(classes)
    natural = 1.0 - exact
    if exact >= EXACT_SHARE_FOR_HYBRID:
        rec, why = (
            "hybrid",
            f"{exact:.0%} of queries carry exact terms (>= {EXACT_SHARE_FOR_HYBRID:.0%}): add BM25 and fuse",
        )
    elif natural >= NATURAL_SHARE_FOR_DENSE:
        rec, why = (
            "dense",
            f"{natural:.0%} of queries are natural language (>= {NATURAL_SHARE_FOR_DENSE:.0%}): start with dense "
            "retrieval",
        )
    else:
        rec, why = "hybrid", f"mixed queries ({natural:.0%} natural, {exact:.0%} exact): hybrid covers both; measure"
    return Advice(classes, natural, exact, rec, why)


@dataclass(frozen=True)
class Verdict:
    """The recommendation checked against measured results (a ``hybrid eval`` JSON's ``results``)."""

    dataset: str
    split: str
    best: str  # the best first stage by nDCG@10 (no rerank or MMR)
    best_ndcg: float
    best_family: str
    matches: bool
    best_overall: str  # the best row including post-processing

    def __str__(self) -> str:
        text = (
            f"measured on {self.dataset} {self.split}: best technique {self.best} (nDCG@10 {self.best_ndcg:.4f}); "
            f"the recommendation {'matches' if self.matches else 'does not match'} it"
        )
        return text + (f" (best with post-processing: {self.best_overall})" if self.best_overall != self.best else "")


def verdict(advice: Advice, eval_json: Mapping[str, Any]) -> Verdict:
    """Compare ``advice`` with an evaluation (the JSON of ``hybrid eval``, schema in docs/EVALUATION.md)."""
    rows = eval_json.get("results") or {}
    if not rows:
        raise InputError("the evaluation has no results to compare with")
    missing = [name for name, row in rows.items() if "family" not in row]
    if missing:
        raise InputError(
            f"the evaluation results do not say each technique's family ({missing[0]!r}); re-run `hybrid eval` to "
            "refresh them"
        )
    first_stage = {n: r for n, r in rows.items() if not r.get("post_processed")}
    best = max(first_stage, key=lambda n: first_stage[n]["ndcg@10"])
    overall = max(rows, key=lambda n: rows[n]["ndcg@10"])
    family = first_stage[best]["family"]
    return Verdict(
        str(eval_json.get("dataset")),
        str(eval_json.get("split")),
        best,
        float(first_stage[best]["ndcg@10"]),
        family,
        advice.matches(family),
        overall,
    )
