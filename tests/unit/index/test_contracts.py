"""The JSON contracts (adapter/schemas): what the writers write validates, what they do not declare fails."""

from __future__ import annotations

import json
from dataclasses import replace
import subprocess
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")  # the test extra has it; CI installs it

from adapter.index.floats import compact_floats  # noqa: E402
from adapter.index import contracts  # noqa: E402
from adapter.index.contracts import Contract, validate  # noqa: E402
from adapter.search.result_json import search_result_json  # noqa: E402
from adapter.errors import InputError  # noqa: E402
from adapter.fusion import RRF, ScoreNormalization  # noqa: E402
from adapter.engines.responses import Bucket, Facet  # noqa: E402
from adapter.fusion.base import FusedBy, LegScore  # noqa: E402
from adapter.fusion.choice.values import FusionChoice  # noqa: E402
from adapter.search.results import Hit, SearchResult, Technique  # noqa: E402
from adapter.engines.dsl import SentRequest  # noqa: E402
from tests.support.extras import requires_extra  # noqa: E402

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
RECORDINGS = [
    pytest.param(p, id=p.stem, marks=[requires_extra("elasticsearch")] if "-elasticsearch-" in p.name else [])
    # replayed under the engine's own client
    for p in sorted((Path(__file__).parents[1] / "recordings").glob("searcher-*.json"))
]


def test_each_schema_is_a_valid_draft_2020_12_schema():
    for contract in Contract:
        jsonschema.Draft202012Validator.check_schema(contracts.schema(contract))


def test_the_writers_write_the_newest_version_their_schema_knows():
    for contract in Contract:
        versions = contracts.schema(contract)["properties"][contracts.VERSION_KEYS[contract]]["enum"]
        assert contracts.VERSIONS[contract] == max(versions), contract
        assert versions == list(range(1, max(versions) + 1)), "every earlier version stays valid"


def _result() -> SearchResult:
    legs = (LegScore("bm25", 1, 3.7, 1.0, 0.5, 0.5), LegScore("dense", None, None, None, 0.5, 0.0))
    chunk = Hit("a#1", 0.4, {"text": "more"}, rank=0, text="more")
    hit = Hit(
        "a",
        0.5,
        {"title": "A", "text": "x", "metadata": {"lang": "es"}},
        rank=1,
        legs=legs,
        title="A",
        text="x",
        highlight={"text": ("<em>x</em>",)},
        chunks=(chunk,),
    )
    return SearchResult(
        "q",
        Technique.HYBRID,
        (hit,),
        FusedBy.SERVER_PIPELINE,
        ScoreNormalization(weights=(0.4, 0.6)),
        "docs-adaptive",
        took_ms=3.0,
        total_ms=5.2,
        notices=("n",),
        requests=1,
        sent=(SentRequest("POST", "/docs/_search", {"search_pipeline": "docs-adaptive"}, {"query": {}}),),
        choice=FusionChoice((0.4, 0.6), ("corpus",), "adaptive", {"corpus_match_quality": 0.4}, "natural"),
        aggregations={"lang": Facet("metadata.lang", (Bucket("es", 3, 2),), other=1)},
    )


def test_a_search_result_with_every_part_validates():
    data = search_result_json(_result())
    validate(Contract.SEARCH, json.loads(json.dumps(data)))  # as printed
    assert data["schema_version"] == contracts.SEARCH_SCHEMA_VERSION
    assert data["fusion"] == {
        "name": "min_max-arithmetic_mean",
        "kind": "normalization",
        "technique": "min_max",
        "combination": "arithmetic_mean",
        "weights": [0.4, 0.6],
    }
    rrf = search_result_json(SearchResult("q", Technique.CLIENT_RRF, (), FusedBy.CLIENT, RRF(40)))
    validate(Contract.SEARCH, rrf)
    assert rrf["fusion"]["rank_constant"] == 40


def test_a_hit_carries_its_title_and_text_once():
    """Issue 37: each hit's title and text were in the answer twice (its source and its top level)."""
    data = search_result_json(_result())
    hit = data["hits"][0]
    assert (hit["title"], hit["text"]) == ("A", "x") and hit["source"] == {"metadata": {"lang": "es"}}
    assert hit["chunks"][0]["text"] == "more" and hit["chunks"][0]["source"] == {}
    # kept where it differs
    other = replace(_result().hits[0], source={"title": "stored title", "text": "x"}, title="A")
    assert search_result_json(replace(_result(), hits=(other,)))["hits"][0]["source"] == {"title": "stored title"}


def test_the_document_is_the_results_fields_as_asdict_gives_them_in_json_types():
    """One walk (for speed: hybrid serve's CPU) that writes exactly what ``asdict`` and json.dumps would."""
    from dataclasses import asdict, replace

    result = replace(
        _result(),
        sent=(
            SentRequest(
                "POST",
                "/docs/_search",
                {"search_pipeline": "p"},
                {"query": {"knn": {"e": {"vector": [0.5, 0.25], "k": 2}}}},
            ),
        ),
    )
    expected = {"schema_version": contracts.SEARCH_SCHEMA_VERSION, **json.loads(json.dumps(asdict(result)))}
    for hit in [*expected["hits"], *(c for h in expected["hits"] for c in h["chunks"])]:  # since 4: the texts once
        hit["source"] = {k: v for k, v in hit["source"].items() if k not in ("title", "text")}
    expected["fusion"] = {
        "name": result.fusion.name,
        "kind": result.fusion.kind,
        **json.loads(json.dumps(asdict(result.fusion))),
    }
    assert json.loads(json.dumps(search_result_json(result, with_vector=True))) == expected
    lean = json.loads(json.dumps(search_result_json(result)))
    assert lean["sent"][0]["body"]["query"]["knn"]["e"] == {
        "vector": "<2 numbers: the query vector, left out (with_vector / --with-vector shows it)>",
        "k": 2,
    }
    assert {k: v for k, v in lean.items() if k != "sent"} == {k: v for k, v in expected.items() if k != "sent"}


@pytest.mark.parametrize("recording", RECORDINGS)
def test_real_answers_replayed_validate(recording):
    """The searcher reading a real node's recorded answers (tests/unit/search/test_replay.py) writes valid documents."""
    from adapter.engines import engine_for
    from adapter.fusion import parse_fusion
    from adapter.search import Searcher
    from adapter.testing import FakeClient

    data = json.loads(recording.read_text(encoding="utf-8"))
    client = FakeClient(recording=data["exchanges"], engine_name=recording.stem.split("-")[1])
    searcher = Searcher.open(client, data["alias"], engine=type(engine_for(client))())
    for spec in data["searches"]:
        options = {k: v for k, v in spec.items() if k not in ("query", "fusion")}
        fusion = spec.get("fusion")
        fusion = (
            parse_fusion(fusion["name"], weights=tuple(fusion["weights"]) if fusion.get("weights") else None)
            if fusion
            else None
        )
        result = searcher.search(spec["query"], fusion=fusion, query_vector=data["vectors"][spec["query"]], **options)
        validate(Contract.SEARCH, json.loads(json.dumps(search_result_json(result))))


@pytest.mark.parametrize("recording", RECORDINGS)
def test_the_query_vector_stays_out_of_the_document_unless_asked(recording):
    """Issue 29 item 6, issue 30 item 2: the requests under 'sent' carried the query vector (~8 KB
    per copy at 384 dimensions); it is left out, its length noted, unless with_vector."""
    from adapter.engines import engine_for
    from adapter.search import Searcher
    from adapter.testing import FakeClient

    data = json.loads(recording.read_text(encoding="utf-8"))
    client = FakeClient(recording=data["exchanges"], engine_name=recording.stem.split("-")[1])
    searcher = Searcher.open(client, data["alias"], engine=type(engine_for(client))())
    spec = next(s for s in data["searches"] if s["technique"] in ("hybrid", "dense") and not s.get("fusion"))
    options = {k: v for k, v in spec.items() if k not in ("query", "fusion")}
    vector = data["vectors"][spec["query"]]
    result = searcher.search(spec["query"], query_vector=vector, **options)
    lean, full = json.dumps(search_result_json(result)), json.dumps(search_result_json(result, with_vector=True))
    sent = json.dumps(compact_floats(vector)[:4])[1:-1]  # as sent: float32's shortest decimals
    assert sent not in lean and sent in full
    assert f"<{len(vector)} numbers: the query vector, left out" in lean
    validate(Contract.SEARCH, json.loads(lean))
    assert len(full) - len(lean) > 3_000


def test_a_key_added_without_a_version_fails():
    data = search_result_json(_result())
    data["hits"][0]["new_key"] = 1
    with pytest.raises(InputError, match="new_key"):
        validate(Contract.SEARCH, data)
    data = search_result_json(_result())
    data["schema_version"] = 99
    with pytest.raises(InputError, match="schema_version"):
        validate(Contract.SEARCH, data)


def test_every_committed_eval_report_validates():
    """Reports of every round (docs/) are schema_version 1 documents: the schema reads them all."""
    # The depth study's eval reports (its rule.json is the study's own result, not an eval document).
    files = sorted((ROOT / "docs" / "results").glob("eval-*.json")) + sorted(
        (ROOT / "docs" / "depth-study").glob("*-depth-*.json")
    )
    assert len(files) >= 10
    for path in files:
        validate(Contract.EVAL, json.loads(path.read_text(encoding="utf-8")))


def test_the_eval_writer_validates():
    from adapter.evaluation import EvalReport, TechniqueResult, TechniqueSpec, Trial, Tuning

    spec = TechniqueSpec("hybrid-rrf", Technique.HYBRID, RRF())
    row = TechniqueResult(
        {"ndcg@10": 0.7, "recall@10": 0.8, "recall@100": 0.9, "mrr@10": 0.6},
        10.0,
        20.0,
        3.0,
        5.0,
        30,
        spec=spec,
        by_class={"exact": {"ndcg@10": 0.5, "queries": 4}},
    )
    tuning = Tuning("train", 80, RRF(40), {"phase_results_processors": []}, (Trial(RRF(40), {"ndcg@10": 0.71}),))
    settings = {
        "analyzer": "english",
        "title_boost": 0.5,
        "titles": True,
        "k": 100,
        "depth_per_leg": 100,
        "shards": 1,
        "weights": [0.5, 0.5],
        "mmr_lambda": None,
        "mmr": None,
        "text_fields": ["title^0.5", "text"],
        "text_layout": "fields",
        "layouts": None,
        "calibration": None,
        "default_technique": "hybrid-adaptive",
        "engine": "opensearch",
        "version": "3.6.0",
        "opensearch": "3.6.0",
        "seconds": 1.5,
        "rrf_parity": {"queries": 30, "identical_order": 30, "identical_up_to_ties": 30},
        "skipped_empty_documents": [],
        "chunk_words": None,
        "server_mmr": False,
    }
    report = EvalReport("scifact", "test", "minilm", "eval-scifact", {"hybrid-rrf": row}, settings, tuning)
    validate(Contract.EVAL, json.loads(json.dumps(report.as_json())))
    bad = report.as_json()
    bad["settings"]["undeclared"] = True
    with pytest.raises(InputError, match="undeclared"):
        validate(Contract.EVAL, bad)


def test_spec_files_validate_as_the_reader_reads_them(tmp_path):
    import yaml

    from adapter.index.spec import Spec, parse_spec_text
    from adapter.models.fingerprint import EmbeddingFingerprint

    fp = EmbeddingFingerprint("m", "minilm", "abc", 384, True)
    written = Spec("docs", "minilm", fp, analyzer="english", extra_pipelines=(("tuned", "{}"),)).to_document()
    validate(Contract.SPEC, written)
    parse_spec_text(json.dumps(written))
    import adapter.index.spec

    examples = [
        b.split("\n", 1)[1].split("```")[0]
        for b in (ROOT / "docs" / "OPERATIONS.md").read_text(encoding="utf-8").split("```yaml")[1:]
    ]
    # the format in the module's docstring
    examples.append(adapter.index.spec.__doc__.split("::\n", 1)[1].split("\n\nUnknown keys")[0])
    specs = [doc for doc in map(yaml.safe_load, examples) if isinstance(doc, dict) and "alias" in doc]
    assert len(specs) >= 2
    for doc in specs:  # the examples people copy
        validate(Contract.SPEC, doc)
    for bad in ({"alias": "docs"}, {"alias": "docs", "embedder": "minilm", "index": {"analyser": "x"}}):
        with pytest.raises(InputError):
            validate(Contract.SPEC, bad)
        with pytest.raises(InputError):
            parse_spec_text(json.dumps(bad))


def test_schemas_ship_in_the_package_and_print():
    cli = "import sys; from adapter.cli import main; sys.exit(main(sys.argv[1:]))"
    out = subprocess.run([sys.executable, "-c", cli, "schema", "search"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["$id"].endswith("search.schema.json")
    version = subprocess.run([sys.executable, "-c", cli, "--version"], capture_output=True, text=True)
    from adapter import __version__

    assert version.returncode == 0 and version.stdout.strip() == f"hybrid {__version__}" and __version__[0].isdigit()
