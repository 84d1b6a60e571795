"""Query sets and judgments in OpenSearch Search Relevance Workbench's formats (3.1+), both ways. Pure.

What the workbench takes, from its documentation (search-relevance/query-sets, /judgments) and its
plugin's request validation (``RestPutQuerySetAction``, ``TextValidationUtil``):

- a query set: ``PUT _plugins/_search_relevance/query_sets`` with ``{"name", "description",
  "sampling": "manual", "querySetQueries": [{"queryText": ...}, ...]}``; the Dashboards upload is
  the same entries as NDJSON, one ``{"queryText": ...}`` a line. Fields besides ``queryText`` and
  ``referenceAnswer`` are kept as custom fields (we write the query's id as ``queryId`` when asked).
  The name is at most 50 characters, the description 250, a query text 2000, and none of them may
  hold a double quote, a backslash, ``<`` or ``>`` (nor a newline, in a query);
- a judgment list: ``PUT _plugins/_search_relevance/judgments`` with ``{"name", "description",
  "type": "IMPORT_JUDGMENT", "judgmentRatings": [{"query": text, "ratings": [{"docId", "rating"}]}]}``,
  ratings written as the documentation writes them (``"2.000"``). Judgments are keyed by the query's
  *text*, so two queries with one text cannot both be exported.

Reading accepts those bodies and what ``GET`` on either endpoint answers (a search response whose
one hit's ``_source`` is the stored object). The workbench's ratings can be fractions (implicit
judgments); qrels grades are whole numbers, so a fraction is refused unless rounding is asked for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from adapter.errors import InputError

NAME_MAX, DESCRIPTION_MAX, TEXT_MAX = 50, 250, 2000
_REFUSED = re.compile(r"[\"\\<>]")  # TextValidationUtil.DANGEROUS_CHARS_PATTERN
QUERY_ID = "queryId"  # the custom field that carries our query id


@dataclass(frozen=True)
class Exchange:
    """Queries and judgments as the evaluation reads them (BEIR: ids, texts, integer grades)."""

    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, int]]  # query id -> document id -> grade


def refused_text(text: str, *, limit: int = TEXT_MAX) -> str | None:
    """Why the workbench refuses ``text`` (None: it takes it)."""
    if not text or not text.strip():
        return "empty"
    if len(text) > limit:
        return f"longer than {limit} characters"
    found = _REFUSED.search(text)
    if found:
        return f"holds {found.group(0)!r} (quotes, backslashes, < and > are refused)"
    if "\n" in text or "\r" in text:
        return "holds a newline"
    return None


def _check_label(what: str, text: str, limit: int) -> None:
    why = refused_text(text, limit=limit)
    if why:
        raise InputError(f"the {what} {text!r} would be refused by the Search Relevance Workbench: {why}")


def exportable(queries: Mapping[str, str], *, drop_refused: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """(the queries the workbench takes, the refused ones with why). Refused queries are an error
    naming them, unless ``drop_refused``; so are two queries with the same text."""
    refused = {q: why for q, text in queries.items() if (why := refused_text(text))}
    if refused and not drop_refused:
        sample = "; ".join(f"{q} {queries[q]!r}: {why}" for q, why in list(refused.items())[:5])
        raise InputError(
            f"{len(refused)} queries would be refused by the Search Relevance Workbench ({sample}); "
            "drop them with --drop-refused, or edit their texts"
        )
    kept = {q: t for q, t in queries.items() if q not in refused}
    by_text: dict[str, list[str]] = {}
    for q, t in kept.items():
        by_text.setdefault(t, []).append(q)
    twins = [ids for ids in by_text.values() if len(ids) > 1]
    if twins:
        raise InputError(
            f"the workbench keys judgments by query text, and {len(twins)} texts belong to several queries "
            f"(e.g. {', '.join(twins[0])}: {kept[twins[0][0]]!r}); merge them first"
        )
    return kept, refused


def query_set(
    queries: Mapping[str, str], *, name: str, description: str = "", with_ids: bool = False
) -> dict[str, Any]:
    """The ``PUT _plugins/_search_relevance/query_sets`` body (texts checked by :func:`exportable`)."""
    _check_label("query set name", name, NAME_MAX)
    if description:
        _check_label("description", description, DESCRIPTION_MAX)
    entries = [{"queryText": text, **({QUERY_ID: qid} if with_ids else {})} for qid, text in queries.items()]
    return {"name": name, "description": description or name, "sampling": "manual", "querySetQueries": entries}


def query_set_ndjson(body: Mapping[str, Any]) -> str:
    """The query set as the Dashboards upload reads it: one entry a line."""
    return "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in body["querySetQueries"])


def judgment_list(
    queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], *, name: str, description: str = ""
) -> dict[str, Any]:
    """The ``PUT _plugins/_search_relevance/judgments`` body: every judgment of the queries given."""
    _check_label("judgment list name", name, NAME_MAX)
    if description:
        _check_label("description", description, DESCRIPTION_MAX)
    ratings = [
        {"query": queries[q], "ratings": [{"docId": d, "rating": f"{g:.3f}"} for d, g in qrels[q].items()]}
        for q in queries
        if qrels.get(q)
    ]
    return {"name": name, "description": description or name, "type": "IMPORT_JUDGMENT", "judgmentRatings": ratings}


def _stored(document: Any, key: str, what: str) -> Any:
    """The object itself, from a PUT body or a GET response (one hit)."""
    if isinstance(document, Mapping) and key in document:
        return document
    hits = (document.get("hits") or {}).get("hits") if isinstance(document, Mapping) else None
    if isinstance(hits, list):
        sources: list[Mapping[str, Any]] = [
            h["_source"] for h in hits if isinstance(h, Mapping) and isinstance(h.get("_source"), Mapping)
        ]
        with_key = [s for s in sources if key in s]
        if len(with_key) == 1:
            return with_key[0]
        if len(with_key) > 1:
            names = ", ".join(repr(s.get("name")) for s in with_key)
            raise InputError(f"the {what} answer holds {len(with_key)} of them ({names}); GET one by its id")
    raise InputError(
        f"not a Search Relevance Workbench {what}: expected an object with {key!r} (or GET's answer holding one)"
    )


def parse_query_set(document: Any) -> dict[str, str]:
    """Query id -> text from a query set: the PUT body, GET's answer, or NDJSON entries (a list).
    Ids are the ``queryId`` fields where present, else ``q1``, ``q2``... in the set's order."""
    entries: Any = (
        document if isinstance(document, list) else _stored(document, "querySetQueries", "query set")["querySetQueries"]
    )
    if not isinstance(entries, list):
        raise InputError('querySetQueries must be a list of {"queryText": ...} entries')
    out: dict[str, str] = {}
    for i, entry in enumerate(entries, start=1):
        text = entry if isinstance(entry, str) else entry.get("queryText") if isinstance(entry, Mapping) else None
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"query set entry {i} has no queryText: {entry!r}")
        qid = str(entry.get(QUERY_ID) or f"q{i}") if isinstance(entry, Mapping) else f"q{i}"
        if qid in out:
            raise InputError(f"query set entry {i}: the query id {qid!r} appears twice")
        out[qid] = text
    return out


def _grade(value: Any, *, where: str, round_fractions: bool) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: the rating {value!r} is not a number") from None
    if number != int(number) and not round_fractions:
        raise InputError(
            f"{where}: the rating {value!r} is a fraction, and qrels grades are whole numbers; "
            "pass --round to round the workbench's ratings"
        )
    if number < 0:
        raise InputError(f"{where}: the rating {value!r} is negative")
    return int(round(number))


def parse_judgments(
    document: Any, queries: Mapping[str, str] | None = None, *, round_fractions: bool = False
) -> Exchange:
    """The judgments of a judgment list (PUT body or GET's answer), keyed to the query set's ids by
    text; a judged query the set lacks (or every one, without a set) gets the next free ``q<n>``."""
    body = _stored(document, "judgmentRatings", "judgment list")
    ratings = body["judgmentRatings"]
    if not isinstance(ratings, list):
        raise InputError('judgmentRatings must be a list of {"query", "ratings"} entries')
    known = dict(queries or {})
    by_text = {text: qid for qid, text in known.items()}
    qrels: dict[str, dict[str, int]] = {}
    for i, entry in enumerate(ratings, start=1):
        if (
            not isinstance(entry, Mapping)
            or not isinstance(entry.get("query"), str)
            or not isinstance(entry.get("ratings"), list)
        ):
            raise InputError(f"judgmentRatings entry {i} needs a 'query' text and a 'ratings' list: {entry!r}")
        text = entry["query"]
        qid = by_text.get(text)
        if qid is None:
            qid = _free_id(known)
            known[qid], by_text[text] = text, qid
        for rating in entry["ratings"]:
            if not isinstance(rating, Mapping) or "docId" not in rating:
                raise InputError(f"judgments of {text!r}: each rating needs a docId and a rating: {rating!r}")
            qrels.setdefault(qid, {})[str(rating["docId"])] = _grade(
                rating.get("rating"),
                where=f"judgments of {text!r}, document {rating['docId']}",
                round_fractions=round_fractions,
            )
    return Exchange(known, qrels)


def _free_id(taken: Iterable[str]) -> str:
    used = set(taken)
    n = len(used) + 1
    while f"q{n}" in used:
        n += 1
    return f"q{n}"


def read_document(text: str, *, what: str) -> Any:
    """A JSON document, or NDJSON lines (a list), as SRW's files come."""
    stripped = text.strip()
    if not stripped:
        raise InputError(f"the {what} file is empty")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    out = []
    for number, line in enumerate(stripped.splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"the {what} file is neither JSON nor NDJSON (line {number}: {exc.msg})") from exc
    return out
