"""How the fake engine answers a query: a small BM25 over the text fields, cosine k-NN over the
stored vectors. Pure."""

from __future__ import annotations

import fnmatch
import math
import re
import unicodedata
from typing import Any, Mapping, Sequence

import numpy as np


K1, B = 1.2, 0.75
Docs = Mapping[str, Mapping[str, Any]]  # id -> source


def tokens(text: Any) -> list[str]:
    """Lowercased, accent-folded words (what the ``folding`` analyzer does)."""
    folded = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    return re.findall(r"\w+", folded.lower())


def value_at(source: Mapping[str, Any], path: str) -> Any:
    node: Any = source
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _values(source: Mapping[str, Any], field: str) -> list[Any]:
    value = value_at(source, field)
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def matches(source: Mapping[str, Any], doc_id: str, clause: Mapping[str, Any]) -> bool:
    """Whether a document passes a filter clause (term, terms, range, exists, ids, bool, match_all)."""
    ((kind, body),) = clause.items()
    if kind == "match_all":
        return True
    if kind == "ids":
        return doc_id in body["values"]
    if kind == "term":
        ((field, value),) = ((k, v) for k, v in body.items() if k != "_name")
        value = value.get("value") if isinstance(value, Mapping) else value
        return value in _values(source, field)
    if kind == "terms":
        ((field, wanted),) = body.items()
        return any(v in wanted for v in _values(source, field))
    if kind == "range":
        ((field, bounds),) = body.items()
        ops = {
            "gt": lambda a, b: a > b,
            "gte": lambda a, b: a >= b,
            "lt": lambda a, b: a < b,
            "lte": lambda a, b: a <= b,
        }
        return any(all(ops[op](v, bound) for op, bound in bounds.items()) for v in _values(source, field))
    if kind == "exists":
        return bool(_values(source, body["field"]))
    if kind == "bool":
        return _bool_matches(source, doc_id, body)
    if kind in ("match", "multi_match"):
        return True  # scored, not filtered: see BM25
    raise ValueError(f"the fake engine does not know the {kind!r} query")


def _bool_matches(source: Mapping[str, Any], doc_id: str, body: Mapping[str, Any]) -> bool:
    def clauses(key: str) -> list[Mapping[str, Any]]:
        got = body.get(key) or []
        return [got] if isinstance(got, Mapping) else list(got)

    if not all(matches(source, doc_id, c) for c in clauses("filter") + clauses("must")):
        return False
    if any(matches(source, doc_id, c) for c in clauses("must_not")):
        return False
    should = clauses("should")
    needed = int(body.get("minimum_should_match", 0 if clauses("must") or clauses("filter") else 1)) if should else 0
    return sum(matches(source, doc_id, c) for c in should) >= needed


class BM25:
    """BM25 (k1 1.2, b 0.75) over the fields of one set of documents."""

    def __init__(self, docs: Docs) -> None:
        self.docs = docs
        self._fields: dict[str, tuple[dict[str, list[str]], dict[str, int], float]] = {}

    def field(self, name: str) -> tuple[dict[str, list[str]], dict[str, int], float]:
        if name not in self._fields:
            terms = {i: tokens(" ".join(map(str, _values(s, name)))) for i, s in self.docs.items()}
            df: dict[str, int] = {}
            for words in terms.values():
                for w in set(words):
                    df[w] = df.get(w, 0) + 1
            avg = sum(map(len, terms.values())) / max(1, sum(1 for t in terms.values() if t))
            self._fields[name] = (terms, df, avg or 1.0)
        return self._fields[name]

    def scores(self, query: str, fields: Sequence[str], operator: str = "or") -> dict[str, float]:
        words = sorted(set(tokens(query)))
        out: dict[str, float] = {}
        n = len(self.docs)
        for spec in fields:
            name, _, boost = spec.partition("^")
            weight = float(boost) if boost else 1.0
            terms, df, avg = self.field(name)
            for doc_id, doc_terms in terms.items():
                found = [w for w in words if w in doc_terms]
                if not found or (operator == "and" and len(found) < len(words)):
                    continue
                score = 0.0
                for w in found:
                    tf = doc_terms.count(w)
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc_terms) / avg))
                out[doc_id] = out.get(doc_id, 0.0) + weight * score
        return out


def _cosine_scores(docs: Docs, body: Mapping[str, Any]) -> list[tuple[str, float]]:
    query = np.asarray(body["vector"], dtype=np.float32)
    scored = []
    for doc_id, source in docs.items():
        stored = source.get(body["field"])
        if not isinstance(stored, list) or not all(matches(source, doc_id, c) for c in body.get("filter") or ()):
            continue
        v = np.asarray(stored, dtype=np.float32)
        denom = float(np.linalg.norm(v) * np.linalg.norm(query)) or 1.0
        # cosinesimil's (1 + cos) / 2, as the servers score it
        scored.append((doc_id, (1.0 + float(v @ query) / denom) / 2.0))
    scored.sort(key=lambda p: (-p[1], p[0]))
    return scored[: int(body["k"])]


def ranked(docs: Docs, query: Mapping[str, Any], bm25: BM25 | None = None) -> list[tuple[str, float]]:
    """Every matching document with its score, best first (filters alone score 0)."""
    bm25 = bm25 or BM25(docs)
    ((kind, body),) = query.items()
    if kind == "fake_knn":
        return _cosine_scores(docs, body)
    text = _text_clause(query)
    scores = bm25.scores(*text) if text else {}
    out = [(i, scores.get(i, 0.0)) for i, s in docs.items() if matches(s, i, query) and (not text or i in scores)]
    out.sort(key=lambda p: (-p[1], p[0]))
    return out


def _text_clause(query: Mapping[str, Any]) -> tuple[str, list[str], str] | None:
    """(text, fields, operator) of the scoring clause of a text leg (match / multi_match, alone or in bool.must)."""
    ((kind, body),) = query.items()
    if kind == "match":
        ((field, options),) = body.items()
        options = options if isinstance(options, Mapping) else {"query": options}
        return str(options["query"]), [field], str(options.get("operator", "or"))
    if kind == "multi_match":
        return str(body["query"]), list(body["fields"]), str(body.get("operator", "or"))
    if kind == "bool":
        for clause in body.get("must") or ():
            found = _text_clause(clause)
            if found:
                return found
    return None


def project(source: Mapping[str, Any], spec: Any) -> dict[str, Any] | None:
    """``_source`` as the body asks for it: False (none), a list of fields, or ``{"excludes": [...]}``."""
    if spec is False:
        return None
    if isinstance(spec, list):
        return {k: v for k, v in source.items() if any(fnmatch.fnmatch(k, p) for p in spec)}
    if isinstance(spec, Mapping):
        return {k: v for k, v in source.items() if not any(fnmatch.fnmatch(k, p) for p in spec.get("excludes", ()))}
    return dict(source)


def sort_key(source: Mapping[str, Any], sort: Sequence[Mapping[str, str]]) -> list[Any]:
    return [value_at(source, next(iter(s))) for s in sort]
