"""Answers a node gives to the search that fetches a page's documents (client fusion's second
request): the text fields come back as excerpts in ``highlight`` (they are kept out of ``_source``
unless the page asks for the full text, adapter.search.page.plan_excerpts), the other fields in ``_source``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

TEXT_FIELDS = ("title", "text")


def page_answer(
    docs: Mapping[str, Mapping[str, Any]], *, text_fields: Sequence[str] = TEXT_FIELDS, took: int = 1
) -> dict[str, Any]:
    """``docs``: id -> the stored document, in the order the node returns them."""
    hits = []
    for doc_id, doc in docs.items():
        hit: dict[str, Any] = {
            "_id": doc_id,
            "_score": 1.0,
            "_source": {k: v for k, v in doc.items() if k not in text_fields},
        }
        excerpts = {f: [doc[f]] for f in text_fields if doc.get(f)}
        if excerpts:
            hit["highlight"] = excerpts
        hits.append(hit)
    return {"took": took, "hits": {"hits": hits}}
