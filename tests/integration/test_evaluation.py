"""`hybrid eval` and `hybrid advise` end to end on a tiny BEIR dataset built from the support docs."""

import json

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.cli import main
from adapter.errors import InputError
from adapter.evaluation import run_eval
from adapter.fusion import fuse_normalized, rrf
from adapter.ingest.ingestor import Ingestor
from adapter.evaluation.metrics import load_beir
from adapter.search import Searcher
from adapter.ingest.sources import read_source
from adapter.fusion import RRF, Combination, Normalization, ScoreNormalization
from adapter.engines import cluster_for
from tests.support.datasets import SUPPORT_QUERIES, eval_args, support_beir, tuning_args

QUERIES = {
    "test": {q: SUPPORT_QUERIES[q] for q in ("t1", "t2", "t3")},
    "train": {"r1": ("tarjeta caducada", ["e-4012"]), **{q: SUPPORT_QUERIES[q] for q in ("t4", "t5", "t6")}},
}


@pytest.fixture
def tiny_beir(tmp_path, support_docs_path):
    return support_beir(tmp_path / "support-beir", support_docs_path, QUERIES)


def test_eval_command_writes_table_json_and_png(capsys, opensearch_url, tiny_beir, tmp_path, index_name):
    out_json, out_png, tuned = tmp_path / "eval.json", tmp_path / "eval.png", tmp_path / "tuned.json"
    policy, model = tmp_path / "policy.json", tmp_path / "model.json"
    code = main(
        eval_args(
            tiny_beir,
            index_name,
            opensearch_url,
            "--analyzer",
            "spanish",
            "--mmr",
            "0.5",
            *tuning_args(tmp_path),
            "--json",
            out_json,
            "--plot",
            out_png,
            "--quiet",
            "--cache",
            tmp_path / "c.sqlite",
        )
    )
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out_json.read_text())
    from adapter.index.contracts import Contract, validate

    validate(Contract.EVAL, data)  # the documented contract (adapter/schemas/eval.schema.json)
    assert data["dataset"] == "support-beir" and data["split"] == "test"
    names = set(data["results"])
    assert {
        "bm25",
        "dense",
        "hybrid-min_max-arithmetic_mean",
        "hybrid-l2-harmonic_mean",
        "hybrid-rrf",
        "client-rrf",
        "bm25+mmr",
    } <= names
    assert any(n.startswith("hybrid-tuned-") for n in names)
    for row in data["results"].values():
        assert 0.0 <= row["ndcg@10"] <= 1.0 and row["latency_ms_p50"] > 0
    assert data["results"]["bm25"]["mrr@10"] > 0.3  # "error E-4012" is found first by BM25
    parity = data["settings"]["rrf_parity"]
    assert parity["identical_up_to_ties"] == parity["queries"] == 3
    assert data["tuning"]["split"] == "train" and data["tuning"]["chosen"]["fusion"]
    assert json.loads(tuned.read_text())["phase_results_processors"]
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "*" in out and "winning search pipeline written to" in out
    # Adaptive fusion beside the fixed ones: calibrated on the train split's query texts, learned on its judgments.
    assert {"hybrid-adaptive", "hybrid-learned", "hybrid-adaptive+mmr"} <= names
    assert data["settings"]["calibration"]["queries"] == 4 and "train" in data["settings"]["calibration"]["source"]
    assert data["settings"]["default_technique"] in names
    by_class = data["results"]["hybrid-adaptive"]["by_class"]
    # "error E-4012" is the exact-term one
    assert by_class["exact"]["queries"] == 1 and by_class["natural"]["queries"] == 2
    assert data["learned"]["family"] in data["learned"]["cross_validated_ndcg@10"]
    from adapter.fusion.choice.policy import AdaptivePolicy

    assert AdaptivePolicy.loads(policy.read_text()).trained_on["split"] == "train"
    assert "nDCG@10 by query class" in out
    # Learned fusion (issue 18): trained on the train split, a row of its own, the model written where asked.
    from adapter.fusion.choice.learned import LearnedFusion

    assert "client-learned" in names and data["learned_fusion"]["trained_on"]["split"] == "train"
    trained = LearnedFusion.loads(model.read_text()).trained_on
    # what a search checks
    assert trained["split"] == "train" and trained["index"].startswith(index_name) and len(trained["embedder"]) == 16
    assert "hybrid search --fusion learned --model" in out
    # The default row's regret against the best fixed fusion of the run, said in the table's footer.
    regret = data["default_regret"]
    assert regret["default"] == data["settings"]["default_technique"] and regret["best_fixed"] in names
    assert f"default regret: {regret['regret']:+.4f}" in out


@pytest.mark.engine("opensearch", "elasticsearch")
def test_tuning_on_the_reported_split_is_refused(client, tiny_beir, e5, index_name):
    test = load_beir(tiny_beir, "test")
    with pytest.raises(InputError, match="same split"):
        run_eval(cluster_for(client), test, e5, alias=index_name, analyzer="spanish", tune_split=test)


def test_advise_compares_with_measured_results(capsys, tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("error E-4012\n¿cómo devuelvo un pedido?\nfactura del pedido #8821\ncambiar la contraseña\n")
    results = tmp_path / "r.json"
    results.write_text(
        json.dumps(
            {
                "dataset": "d",
                "split": "test",
                "results": {
                    "bm25": {"ndcg@10": 0.5, "family": "bm25"},
                    "dense": {"ndcg@10": 0.6, "family": "dense"},
                    "hybrid-rrf": {"ndcg@10": 0.7, "family": "hybrid"},
                    "hybrid-rrf+mmr": {"ndcg@10": 0.71, "family": "hybrid", "post_processed": True},
                },
            }
        )
    )
    assert main(["advise", str(queries), "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "50% exact terms" in out and "recommendation: hybrid" in out
    assert "best technique hybrid-rrf" in out and "the recommendation matches it" in out


@pytest.mark.parametrize("normalization", [Normalization.MIN_MAX, Normalization.L2])
@pytest.mark.parametrize("combination", list(Combination))
def test_offline_fusion_reproduces_the_server(client, index_name, e5, support_docs_path, normalization, combination):
    """What tuning computes offline is what the server computes for the same legs."""
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    Ingestor.open(client, index_name, e5, progress=False).ingest(read_source(support_docs_path))
    searcher = Searcher.open(client, index_name, e5)
    fusion = ScoreNormalization(normalization, combination, (0.3, 0.7))
    for query in ("¿cómo devuelvo un pedido?", "error E-4012 tarjeta"):
        server = searcher.search(query, technique="hybrid", fusion=fusion, k=12, depth=12)
        offline = fuse_normalized(
            searcher.legs(query, depth=12), normalization=normalization, combination=combination, weights=(0.3, 0.7)
        )
        assert [h.id for h in server.hits] == [f.id for f in offline][: len(server.hits)]
        assert [h.score for h in server.hits] == pytest.approx([f.score for f in offline][: len(server.hits)], rel=1e-5)
    server = searcher.search("envío del pedido", technique="hybrid", fusion=RRF(), k=12, depth=12)
    assert [h.id for h in server.hits] == [f.id for f in rrf(searcher.legs("envío del pedido", depth=12))][
        : len(server.hits)
    ]


@pytest.mark.engine("opensearch", "elasticsearch")
def test_advise_measures_a_dataset_when_given_qrels(capsys, client, opensearch_url, tiny_beir, tmp_path):
    from tests.conftest import drop_hybrid_index

    queries = tmp_path / "q.txt"
    queries.write_text("error E-4012\n¿cómo devuelvo un pedido?\n")
    alias = "eval-support-beir-multilingual-e5-small"
    try:
        code = main(
            [
                "advise",
                str(queries),
                "--dataset",
                str(tiny_beir),
                "--embedder",
                "multilingual-e5-small",
                "--analyzer",
                "spanish",
                "--url",
                opensearch_url,
            ]
        )
        out = capsys.readouterr().out
        assert code == 0 and "measured on support-beir test: best technique" in out
    finally:
        drop_hybrid_index(client, alias)


@pytest.mark.engine("opensearch", "elasticsearch")
def test_eval_scores_the_default_as_searches_run_it(capsys, client, opensearch_url, tiny_beir, tmp_path, index_name):
    """Issue 39: on Elasticsearch eval printed "the product's default: hybrid-adaptive" but wrote no such row, so
    its regret and "default lost to ..." verdict compared nothing. The default's row is there under the printed
    name, ranks every query as a plain hybrid search of the eval's index does, and the regret compares it."""
    from adapter.evaluation.run import layout_alias
    from adapter.evaluation.runfiles import read_run
    from adapter.models.embedders import load_embedder

    report = tmp_path / "report"
    args = ("--json", tmp_path / "eval.json", "--report", report, "--quiet", "--cache", tmp_path / "c.sqlite")
    code = main(eval_args(tiny_beir, index_name, opensearch_url, *args))
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads((tmp_path / "eval.json").read_text())
    default = data["settings"]["default_technique"]
    assert default and f"the product's default: {default}" in out
    assert default in data["results"], f"no row for the default {default}: {sorted(data['results'])}"
    assert data["default_regret"]["default"] == default
    assert data["default_regret"]["ndcg@10"] == round(data["results"][default]["ndcg@10"], 4)
    assert f"default {data['default_regret']['ndcg@10']:.4f}" in out
    # As searches run it: a plain hybrid search (no fusion named) of the eval's index lists the same documents.
    searcher = Searcher.open(
        cluster_for(client),
        layout_alias(index_name, data["settings"]["text_layout"]),
        load_embedder("multilingual-e5-small"),
    )
    run = read_run(report / "runs" / f"{default}.run")
    for qid, (text, _) in QUERIES["test"].items():
        plain = searcher.search(text, k=10, depth=data["settings"]["depth_per_leg"])
        assert [h.id for h in plain.hits] == [d for d, _ in run[qid][:10]], qid


@pytest.mark.engine("opensearch", "elasticsearch")
def test_eval_refuses_an_unknown_technique_before_creating_anything(
    capsys, client, opensearch_url, tiny_beir, index_name
):
    """Issue 39: `hybrid eval --techniques bm25,nope` built the index (templates, pipelines, the corpus embedded and
    indexed) and only then refused. Now it refuses first, naming the techniques it knows, and nothing exists."""
    code = main(eval_args(tiny_beir, index_name, opensearch_url, "--techniques", "bm25,nope", "--quiet", "--no-cache"))
    err = capsys.readouterr().err
    assert code != 0
    assert "nope" in err and "bm25" in err and "dense" in err and "client-rrf" in err, err
    cluster = cluster_for(client)
    assert cluster.indices_matching(f"{index_name}*") == [] and cluster.aliases_matching(f"{index_name}*") == set()
    assert cluster.index_templates_matching(f"{index_name}*") == []
    for part in ("text", "vector", "metadata"):
        assert cluster.get_component_template(f"{index_name}-{part}") is None
    pipelines = cluster.pipelines.search_pipelines() if cluster.pipelines is not None else {}
    assert not [p for p in pipelines if p.startswith(index_name)]


@pytest.mark.engine("opensearch", "elasticsearch")
def test_eval_says_what_its_index_lacks_as_init_does(capsys, client, opensearch_url, tiny_beir, index_name, target):
    """Issue 39: on a cluster without analysis-common (Elasticsearch's test distribution) `hybrid init` says that
    `folding` cannot fold accents there; `hybrid eval`, building its index with the same analyzer, said nothing.
    Now eval prints init's notices for the analyzer it uses, before it measures (and none where there are none)."""
    from adapter.index.analysis import AnalysisSupport, text_analysis

    args = ("--analyzer", "folding", "--techniques", "bm25", "--quiet", "--no-cache")
    code = main(eval_args(tiny_beir, index_name, opensearch_url, *args))
    out = capsys.readouterr().out
    assert code == 0
    expected = text_analysis("folding", AnalysisSupport.of(cluster_for(client).probe())).notices
    for notice in expected:
        assert f"note: {notice}" in out, out
    if target.engine == "elasticsearch":
        assert "accents are NOT folded" in out, out  # the test distribution has no analysis-common
    else:
        assert "accents are NOT folded" not in out, out
