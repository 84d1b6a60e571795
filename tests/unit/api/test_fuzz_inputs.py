"""Property-based fuzzing (hypothesis) of everything that reads user input without a cluster:
the query and filter builders, the advisor's classifier, the source readers and asset rendering.

Properties: nothing escapes except the adapter's own errors (no traceback from a KeyError or a
UnicodeError), and user text only ever reaches ``match``-type clauses, never ``query_string``
or a script.
"""

from __future__ import annotations

import json
import string

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter.fusion.choice.advise import advise, classify
from adapter.index.assets import IndexNames, IndexSpec, validate_index_name
from adapter.engines import HybridRequest
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import HybridError
from adapter.fusion import parse_fusion, parse_weights
from adapter.engines.dsl import TextLeg, clean_query, filter_clauses, text_query
from adapter.ingest.sources import FieldMap, RowError, SourceDoc, read_csv, read_jsonl
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.engines.opensearch.capabilities import opensearch_capabilities

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FORBIDDEN = ("query_string", "simple_query_string", "script", "script_score", "wrapper", "regexp")

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)  # any Unicode a user can type
hostile = st.one_of(
    text,
    st.sampled_from(
        [
            '" OR 1=1 --',
            "title:* AND _exists_:x",
            '{"script": "System.exit(0)"}',
            "\\u0000",
            "*",
            "?",
            "~",
            "/.*/",
            "query_string",
            "ctx._source.x = 1",
            "E-4012 AND NOT",
            "\x00\x01",
            "\ud7ff",
            "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        ]
    ),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text)
filter_values = st.one_of(
    scalars,
    st.lists(scalars, max_size=4),
    st.dictionaries(st.sampled_from(["gt", "gte", "lt", "lte", "eq", "script"]), scalars, max_size=3),
)
filters = st.dictionaries(
    st.one_of(text, st.sampled_from(["lang", "parent_id", "metadata.x", "", "a.b.c"])), filter_values, max_size=4
)


def keys_anywhere(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | set().union(*(keys_anywhere(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_anywhere(v) for v in value)) if value else set()
    return set()


def outcome(fn, *args, **kwargs):
    """The result, or None when the adapter refused the input with its own error."""
    try:
        return fn(*args, **kwargs)
    except HybridError:
        return None


@FUZZ
@given(
    query=hostile,
    filters=filters,
    fields=st.sampled_from([("text",), ("title^0.5", "text"), ("name", "summary", "body")]),
)
def test_user_text_only_reaches_match_clauses(query, filters, fields):
    cleaned = outcome(clean_query, query)
    if cleaned is None:
        return
    body = outcome(text_query, cleaned, TextLeg(fields), filters)
    if body is None:
        return
    json.dumps(body)  # serialisable as the client will send it
    assert not keys_anywhere(body) & set(FORBIDDEN)
    knn = outcome(OPENSEARCH.knn_query, np.ones(4, np.float32), field="embedding", k=10, filters=filters)
    if knn is not None:
        hybrid = OPENSEARCH.hybrid_body(
            HybridRequest(body, knn, caps=opensearch_capabilities("3.6.0"), depth=10, size=10)
        )
        assert not keys_anywhere(hybrid) & set(FORBIDDEN)


@FUZZ
@given(filters=filters)
def test_filters_are_term_terms_or_range_clauses_or_a_clear_error(filters):
    clauses = outcome(filter_clauses, filters)
    if clauses is not None:
        assert all(next(iter(c)) in ("term", "terms", "range") for c in clauses)
        assert all(
            set(c["range"][next(iter(c["range"]))]) <= {"gt", "gte", "lt", "lte"} for c in clauses if "range" in c
        )


@FUZZ
@given(queries=st.lists(hostile, max_size=8))
def test_the_advisor_classifies_anything(queries):
    for q in queries:
        result = outcome(classify, q)
        assert result is None or result.kind in ("exact", "natural")
    advice = outcome(advise, queries)
    assert advice is None or advice.recommendation in ("hybrid", "dense", "bm25")


@FUZZ
@given(
    spec=st.text(max_size=40), weights=st.text(max_size=20), rank_constant=st.one_of(st.none(), st.integers(-5, 10_000))
)
def test_fusion_options_parse_or_are_refused(spec, weights, rank_constant):
    parsed_weights = outcome(parse_weights, weights)
    fusion = outcome(parse_fusion, spec, weights=parsed_weights, rank_constant=rank_constant)
    if fusion is not None:
        assert parse_fusion(fusion.name).name == fusion.name


lines = st.one_of(
    st.binary(max_size=120),
    st.builds(
        lambda d: json.dumps(d).encode(),
        st.dictionaries(st.sampled_from(["id", "_id", "text", "title", "lang", "x"]), scalars, max_size=5),
    ),
    st.builds(
        lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass"),
        st.fixed_dictionaries({"id": text, "text": text}),
    ),
    st.sampled_from([b"{", b"[]", b"null", b'\xef\xbb\xbf{"id":"b","text":"bom"}', b'{"id":"s","text":"\\ud800"}']),
)


@FUZZ
@given(content=st.lists(lines, max_size=12))
def test_jsonl_reader_yields_rows_or_row_errors_never_a_traceback(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "d.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ").replace(b"\r", b" ") for line in content) + b"\n")
    rows = outcome(lambda: list(read_jsonl(path, FieldMap(id="id"))))
    for row in rows or ():
        assert isinstance(row, (SourceDoc, RowError))
        if isinstance(row, SourceDoc):
            row.id.encode("utf-8")  # what reaches the cluster is valid Unicode
            row.text.encode("utf-8")
            json.dumps(dict(row.metadata), ensure_ascii=False).encode("utf-8")


@FUZZ
@given(content=st.binary(max_size=400))
def test_csv_reader_yields_rows_or_row_errors_never_a_traceback(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "d.csv"
    path.write_bytes(b"id,text,lang\n" + content)
    rows = outcome(lambda: list(read_csv(path, FieldMap())))
    for row in rows or ():
        assert isinstance(row, (SourceDoc, RowError))
        if isinstance(row, SourceDoc):
            (row.id + row.text).encode("utf-8")


name_chars = st.text(alphabet=string.ascii_letters + string.digits + '-_.+#*?"<>|/\\ ,:é', max_size=40)


@FUZZ
@given(
    alias=name_chars,
    analyzer=st.sampled_from(["folding", "english", "spanish", "polish", "nope"]),
    title_boost=st.floats(allow_nan=True, allow_infinity=True),
    dimension=st.integers(-2, 4096),
    fields=st.lists(name_chars, max_size=4),
    fusion=st.sampled_from(["rrf", "min_max-arithmetic_mean", "bogus", "rrf-0"]),
)
def test_asset_rendering_renders_or_refuses(alias, analyzer, title_boost, dimension, fields, fusion):
    fp = EmbeddingFingerprint("m", "minilm", "abc", dimension, True)
    names = outcome(lambda: IndexNames(validate_index_name(alias)))
    spec = outcome(
        IndexSpec,
        fp,
        analyzer=analyzer,
        title_boost=title_boost,
        text_fields=tuple(fields) or ("text",),
        default_fusion=fusion,
    )
    if names is None or spec is None:
        return
    rendered = outcome(OPENSEARCH.render_components, names, spec)
    if rendered is not None:
        json.dumps(rendered)
        json.dumps(OPENSEARCH.render_index_template(names, spec))
