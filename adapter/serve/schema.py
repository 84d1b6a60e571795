"""What a ``hybrid serve`` request carries, as pydantic models: checked at the door, and the
OpenAPI document's schemas (``/openapi.json``).

Types only. A JSON body is strict: ``{"q": 1}`` is refused, never read as the query ``"1"``, and a
name the server does not take is refused, never ignored. A query string's values are text, read as
each field's type (``k=5``). The bounds that depend on the server's :class:`~adapter.serve.params.Limits`
(k, from, depth, the query's length, the columns) are checked after, by :mod:`adapter.serve.params`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_TECHNIQUE = "bm25, dense, hybrid (fused on the server), client-rrf or client (both legs fused here); default hybrid"
_CLIENT = (
    "who searches, for the UBI record (hybrid serve --ubi): a random id per browser, "
    "never a name or an e-mail address; default anonymous"
)
_FUSION = (
    "a fusion (rrf, min_max-arithmetic_mean, z_score-..., dbsf, ...; /api/info lists this cluster's), adaptive, "
    "or none: the index's default"
)


class _Configuration(BaseModel):
    """One search configuration: a ``/search`` call's parameters or a compare column."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)

    technique: str | None = Field(None, description=_TECHNIQUE, examples=["hybrid"])
    fusion: str | None = Field(None, description=_FUSION, examples=["rrf"])
    weights: list[float] | None = Field(
        None, description="bm25 and dense weights, each from 0 to 1", examples=[[0.3, 0.7]]
    )
    rank_constant: int | None = Field(None, description="RRF's rank constant, 1 to 10000 (default 60)")
    k: int | None = Field(None, description="hits per page (default 10; at most the server's limits.k)")
    from_: int | None = Field(
        None, alias="from", description="the page's offset (from + k at most the server's limits.offset)"
    )
    depth: int | None = Field(None, description="candidates per leg, k to limits.depth (default: the searcher's)")
    rerank: int | bool | None = Field(None, description="rerank the top N with the server's cross-encoder (true: 50)")
    mmr: float | None = Field(None, description="diversify with MMR: lambda from 0 to 1")
    explain: bool | None = Field(None, description="each hit's legs: ranks, raw and normalised scores (default true)")
    highlight: bool | None = Field(None, description="the hits' matches marked in <em> (default true)")
    full_text: bool | None = Field(
        None, description="the hits' whole texts instead of bounded excerpts (default false)"
    )
    filter: list[str] | str | None = Field(
        None, description="field=value, or field=a|b for any of", examples=[["lang=es"]]
    )

    def params(self) -> dict[str, Any]:
        """What :func:`adapter.serve.params.parse_config` reads (the names as sent, unset ones left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)


class Column(_Configuration):
    """One column of a compare."""


class SearchBody(_Configuration):
    """``POST /search``: the query and its configuration, a JSON object."""

    q: str = Field(description="the query", examples=["¿cómo devuelvo un pedido?"])
    client_id: str | None = Field(None, min_length=1, max_length=100, description=_CLIENT)

    def params(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"client_id"})


class SearchQuery(BaseModel):
    """``GET /search``: the same parameters in the query string (text, read as each field's type;
    ``weights=0.3,0.7``; ``filter`` repeated)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    q: str = Field(description="the query")
    technique: str | None = Field(None, description=_TECHNIQUE)
    fusion: str | None = Field(None, description=_FUSION)
    weights: str | None = Field(None, description="bm25,dense weights, e.g. 0.3,0.7")
    rank_constant: int | None = None
    k: int | None = None
    from_: int | None = Field(None, alias="from")
    depth: int | None = None
    rerank: str | None = Field(None, description="N, true or false")
    mmr: float | None = None
    explain: bool | None = None
    highlight: bool | None = None
    full_text: bool | None = None
    filter: list[str] | None = None
    client_id: str | None = Field(None, min_length=1, max_length=100, description=_CLIENT)

    def params(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, exclude={"client_id"})


class CompareBody(BaseModel):
    """``POST /api/compare``: one query, one to ``limits.columns`` configurations."""

    model_config = ConfigDict(strict=True, extra="forbid")

    q: str = Field(description="the query")
    columns: list[Column] = Field(description="the configurations, side by side")
    client_id: str | None = Field(None, min_length=1, max_length=100, description=_CLIENT)


def refusal(errors: list[dict[str, Any]]) -> str:
    """pydantic's validation errors as one sentence a person can act on."""
    said = []
    for error in errors[:5]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part not in ("body", "query"))
        if error.get("type") == "extra_forbidden":
            said.append(f"unknown parameter {where}")
        elif error.get("type") == "missing":
            said.append(f"{where} is missing")
        else:
            said.append(
                f"{where}: {error.get('msg', 'invalid')}, got {_shown(error.get('input'))}"
                if where
                else error.get("msg", "invalid")
            )
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(said) + more


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
