"""What a ``hybrid serve`` request may ask for, parsed and capped at the boundary. Pure.

A search is a query and a *configuration* (technique, fusion, weights, rank constant, depth, rerank,
MMR); every value is checked here and refused with a message that says what was expected, before
anything reaches the cluster. The caps keep one request from asking the cluster or the model for
much: the query's length, the hits, the offset, the candidate depth, the columns of a compare.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from adapter.errors import InputError
from adapter.ingest.sources import visible
from adapter.search.results import Technique

ADAPTIVE = "adaptive"
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")
_N = TypeVar("_N", int, float)


@dataclass(frozen=True)
class Limits:
    """The most one request may ask for."""

    query_chars: int = 1000
    k: int = 100
    offset: int = 1000  # from + k
    depth: int = 1000
    columns: int = 4
    rerank: int = 100
    body_bytes: int = 64 * 1024

    def as_json(self) -> dict[str, int]:
        return asdict(self)  # every field a number, in the order declared


@dataclass(frozen=True)
class Config:
    """One search configuration (a compare column, or a ``/search`` call's parameters)."""

    technique: Technique = Technique.HYBRID
    fusion: str | None = None  # a fusion name, "adaptive", or None: the index's default
    weights: tuple[float, ...] | None = None
    rank_constant: int | None = None
    k: int = 10
    from_: int = 0
    depth: int | None = None
    rerank: int | None = None  # rerank the top N with the server's cross-encoder
    mmr: float | None = None  # MMR lambda
    explain: bool = True
    highlight: bool = True
    filters: tuple[tuple[str, str | tuple[str, ...]], ...] = ()
    full_text: bool = False  # the hits' whole texts, not their bounded excerpts

    @property
    def label(self) -> str:
        parts = [self.technique.value]
        if self.fusion:
            parts.append(self.fusion)
        if self.weights:
            parts.append("/".join(f"{w:g}" for w in self.weights))
        if self.rank_constant:
            parts.append(f"k={self.rank_constant}")
        if self.rerank:
            parts.append(f"rerank {self.rerank}")
        if self.mmr is not None:
            parts.append(f"MMR {self.mmr:g}")
        return " · ".join(parts)


def _text(value: Any, name: str) -> str:
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise InputError(f"{name} was given {len(value)} times; give it once")
        value = value[0]
    return str(value).strip()


def _number(value: Any, name: str, low: _N, high: _N, parse: Callable[[str], _N], kind: str, spec: str) -> _N:
    """``value`` as a number from ``low`` to ``high``; ``kind`` names it and ``spec`` formats the bounds in a
    refusal."""
    text = _text(value, name)
    try:
        number = parse(text)
    except ValueError:
        raise InputError(f"{name} must be {kind} from {low:{spec}} to {high:{spec}}, got {text!r}") from None
    if not low <= number <= high:
        raise InputError(f"{name} must be from {low:{spec}} to {high:{spec}}, got {number:{spec}}")
    return number


def _int(value: Any, name: str, low: int, high: int) -> int:
    return _number(value, name, low, high, int, "a whole number", "")


def _float(value: Any, name: str, low: float, high: float) -> float:
    return _number(value, name, low, high, float, "a number", "g")


def _bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = _text(value, name).lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise InputError(f"{name} must be true or false, got {text!r}")


def query_text(value: Any, limits: Limits) -> str:
    text = _text(value, "q") if value is not None else ""
    if not text:
        raise InputError("q (the query) is empty")
    if not visible(text):  # NUL, zero-width or other invisible characters: nothing for BM25 to match, a vector of noise
        raise InputError(
            "q (the query) has no visible character (only spaces, zero-width or control characters); "
            "give some text to search for"
        )
    if len(text) > limits.query_chars:
        raise InputError(f"the query is {len(text)} characters long; this server takes at most {limits.query_chars}")
    return text


# The parameters a search takes (a query string's names, or a JSON object's keys); any other is refused, named.
PARAMETERS = frozenset(
    {
        "technique",
        "fusion",
        "weights",
        "rank_constant",
        "k",
        "from",
        "depth",
        "rerank",
        "mmr",
        "explain",
        "highlight",
        "full_text",
        "filter",
        "q",
    }
)


def parse_config(params: Mapping[str, Any], limits: Limits, *, reranker: bool) -> Config:
    """A configuration from request parameters (query string values, or a JSON object's)."""
    unknown = sorted(set(params) - PARAMETERS)
    if unknown:
        raise InputError(f"unknown parameters {', '.join(unknown)}; this server takes {', '.join(sorted(PARAMETERS))}")
    technique = (
        Technique.parse(_text(params["technique"], "technique"))
        if params.get("technique") not in (None, "")
        else Technique.HYBRID
    )
    fusion = _text(params["fusion"], "fusion").lower() if params.get("fusion") not in (None, "") else None
    weights = None
    if params.get("weights") not in (None, ""):
        raw = params["weights"]
        items = raw if isinstance(raw, list) and len(raw) != 1 else _text(raw, "weights").split(",")
        weights = tuple(_float(w, "each weight", 0.0, 1.0) for w in items)
    rank_constant = (
        _int(params["rank_constant"], "rank_constant", 1, 10_000)
        if params.get("rank_constant") not in (None, "")
        else None
    )
    k = _int(params["k"], "k", 1, limits.k) if params.get("k") not in (None, "") else 10
    from_ = _int(params["from"], "from", 0, limits.offset) if params.get("from") not in (None, "") else 0
    if from_ + k > limits.offset:
        raise InputError(f"from + k = {from_ + k}; this server pages to at most {limits.offset}")
    depth = _int(params["depth"], "depth", k, limits.depth) if params.get("depth") not in (None, "") else None
    rerank = _rerank(params.get("rerank"), limits, reranker=reranker, page_end=from_ + k)
    mmr = _float(params["mmr"], "mmr", 0.0, 1.0) if params.get("mmr") not in (None, "") else None
    explain = _bool(params["explain"], "explain") if params.get("explain") not in (None, "") else True
    highlight = _bool(params["highlight"], "highlight") if params.get("highlight") not in (None, "") else True
    full_text = _bool(params["full_text"], "full_text") if params.get("full_text") not in (None, "") else False
    return Config(
        technique,
        fusion,
        weights,
        rank_constant,
        k,
        from_,
        depth,
        rerank,
        mmr,
        explain,
        highlight,
        _filters(params.get("filter")),
        full_text,
    )


def _rerank(value: Any, limits: Limits, *, reranker: bool, page_end: int) -> int | None:
    """How many hits to rerank (None: none): the number asked (``true``: 50), at least the page's end ``from + k``;
    refused on a server started without a reranker."""
    if value in (None, "", False, "false", "0"):
        return None
    if not reranker:
        raise InputError("this server has no reranker; start it with --reranker MODEL to rerank")
    return max(page_end, _int(value, "rerank", 1, limits.rerank) if value is not True else 50)


def _filters(value: Any) -> tuple[tuple[str, str | tuple[str, ...]], ...]:
    if value in (None, "", []):
        return ()
    items: Sequence[Any] = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        text = str(item)
        if "=" not in text:
            raise InputError(f"filters look like field=value (value1|value2 for any of), got {text!r}")
        key, raw = text.split("=", 1)
        out.append((key.strip(), tuple(raw.split("|")) if "|" in raw else raw))
    return tuple(out)


def parse_compare(body: Any, limits: Limits, *, reranker: bool) -> tuple[str, list[Config]]:
    """``{"q": ..., "columns": [config, ...]}`` (two to ``limits.columns`` columns)."""
    if not isinstance(body, Mapping):
        raise InputError('a compare request is a JSON object: {"q": "...", "columns": [{...}, ...]}')
    query = query_text(body.get("q"), limits)
    columns = body.get("columns")
    if not isinstance(columns, list) or not columns:
        raise InputError("columns must be a list of one to four configurations")
    if len(columns) > limits.columns:
        raise InputError(f"{len(columns)} columns; this server compares at most {limits.columns}")
    configs = []
    for i, column in enumerate(columns, start=1):
        if not isinstance(column, Mapping):
            raise InputError(f"column {i} must be an object of search parameters")
        try:
            configs.append(parse_config({k: v for k, v in column.items()}, limits, reranker=reranker))
        except InputError as exc:
            raise InputError(f"column {i}: {exc}") from exc
    return query, configs
