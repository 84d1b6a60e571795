"""The one rule for a new index's analyzer and embedder (adapter.index.language), its inverse reading of a
live index's analyzer (adapter.index.analysis.spec_analyzer), and the detector on the labelled sets' documents."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from adapter.index.analysis import CLUSTER_ANALYZERS, AnalysisSupport, spec_analyzer, text_analysis
from adapter.index.language import (
    DEFAULT_ANALYZER,
    LANGUAGE_ANALYZERS,
    MULTILINGUAL_EMBEDDER,
    STEMS,
    Languages,
    choose,
)
from tests.support.extras import requires_extra

FULL = AnalysisSupport(("analysis-icu", "analysis-stempel"), ("pl_PL", "es_ES"), "opensearch 3.6.0")
PLAIN = AnalysisSupport((), (), "opensearch 3.6.0")  # no plugin, no dictionary
NO_COMMON = AnalysisSupport((), ("es_ES", "pl_PL"), "elasticsearch 9.2.4", analysis_common=False)
DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"


def _languages(**counts: int) -> Languages:
    return Languages(
        tuple(sorted(counts.items(), key=lambda kv: -kv[1])), f"{sum(counts.values())} documents of docs.jsonl"
    )


@pytest.mark.unit
def test_one_language_gets_its_stems_beside_the_words_and_the_line_says_why_and_how_to_override():
    """Issue 39's measurement (docs/EVALUATION.md, candidate E): the words as written (folded) beside their stems had
    the smallest worst shortfall on ten labelled sets; the line names the language and the stems."""
    choice = choose(_languages(es=96, en=4), FULL)
    assert (choice.analyzer, choice.embedder) == ("spanish_stems", MULTILINGUAL_EMBEDDER)
    assert choice.line() == (
        "analyzer: spanish_stems, embedder: multilingual-e5-small (96% of 100 documents of docs.jsonl are Spanish; "
        "spanish_stems keeps the words as written (folded) beside their spanish stems (docs/EVALUATION.md); "
        "--analyzer / --embedder to choose)"
    )
    for language, analyzer in (("en", "english"), ("de", "german"), ("pl", "polish")):
        chosen = choose(_languages(**{language: 50}), FULL)
        assert (chosen.analyzer, chosen.embedder) == (f"{analyzer}_stems", MULTILINGUAL_EMBEDDER)
        text_analysis(chosen.analyzer, FULL)  # renders there
    # English too keeps the multilingual embedder: MiniLM lost 0.035-0.056 on parts-en
    assert choose(_languages(en=200), PLAIN).embedder == MULTILINGUAL_EMBEDDER


@pytest.mark.unit
def test_a_language_without_a_stems_analyzer_gets_folding_not_its_analyzer():
    """French (not measured with stems) keeps rule C: folding ranked with the language's analyzer or above it."""
    chosen = choose(_languages(fr=50), FULL)
    assert chosen.analyzer == "folding" and "folding ranks as well as french or better" in chosen.why


@pytest.mark.unit
def test_without_what_the_stems_need_the_rule_gives_folding():
    """No analysis-common (no keyword_repeat / remove_duplicates), or Polish without a stemmer: rule C's folding."""
    for language in ("es", "pl", "en"):
        chosen = choose(_languages(**{language: 50}), NO_COMMON)
        assert chosen.analyzer == "folding", chosen
        # the line says why not the stems (what the cluster lacks), not a ranking the stems' own table contradicts
        assert "no analysis-common module" in chosen.why or f"{STEMS[language]} needs" in chosen.why, chosen.why
        assert "analysis-common module" in chosen.why, chosen.why
        assert "ranks as well as" not in chosen.why, chosen.why
    assert choose(_languages(pl=50), PLAIN).analyzer == "folding"
    assert choose(_languages(es=50), PLAIN).analyzer == "spanish_stems"  # built-in light stemmer: no plugin needed


@pytest.mark.unit
def test_languages_written_without_spaces_keep_their_analyzer():
    """The standard tokenizer under folding cannot split Chinese, Japanese, Korean or Thai into words (not measured)."""
    assert choose(_languages(zh=30), FULL).analyzer == "cjk"
    assert choose(_languages(ja=30), PLAIN).analyzer == "cjk"
    assert choose(_languages(th=30), PLAIN).analyzer == "thai"


@pytest.mark.unit
def test_polish_needs_a_stemmer_the_cluster_has():
    from adapter.index.language import language_analyzer

    assert language_analyzer("pl", FULL)[0] == "polish"
    assert language_analyzer("pl", AnalysisSupport((), ("pl_PL",)))[0] == "polish"  # Hunspell alone will do
    without = choose(_languages(pl=40), PLAIN)
    assert without.analyzer == DEFAULT_ANALYZER and "no Polish stemmer" in without.why


@pytest.mark.unit
def test_mixed_documents_get_folding_or_icu_and_the_multilingual_embedder():
    mixed = _languages(es=20, en=12, pl=8)
    assert choose(mixed, FULL).analyzer == "icu_folding"
    assert choose(mixed, PLAIN).analyzer == "folding"
    assert choose(mixed, PLAIN).embedder == MULTILINGUAL_EMBEDDER
    assert "50% Spanish, 30% English, 20% Polish: mixed" in choose(mixed, PLAIN).why
    # 80% is one language: a Spanish help centre quotes English error messages
    one = choose(_languages(es=80, en=20), FULL)
    assert one.analyzer == "spanish_stems" and "80% of 100 documents of docs.jsonl are Spanish" in one.why


@pytest.mark.unit
def test_no_documents_or_too_few_give_the_default():
    assert choose(None, FULL).analyzer == DEFAULT_ANALYZER
    assert choose(None, FULL).why == "no documents to read the language from yet"
    few = choose(_languages(es=2), FULL)
    assert few.analyzer == DEFAULT_ANALYZER and "only 2 documents" in few.why


@pytest.mark.unit
def test_without_analysis_common_a_language_needs_its_dictionary():
    from adapter.index.language import language_analyzer

    assert language_analyzer("es", NO_COMMON)[0] == "spanish"  # rebuilt from Hunspell es_ES
    english = choose(_languages(en=30), NO_COMMON)
    assert english.analyzer == DEFAULT_ANALYZER and "no analysis-common" in english.why


@pytest.mark.unit
@pytest.mark.parametrize("support", [FULL, PLAIN, NO_COMMON], ids=["full", "plain", "elasticsearch-integ-test"])
def test_the_rule_picks_only_what_the_cluster_renders(support):
    """Issue 39 on Elasticsearch's integ-test node (no analysis-common: no language analyzers, no asciifolding):
    whatever the documents' language, or a mix, the rule's analyzer renders there (no ConfigurationError)."""
    from adapter.index.language import LANGUAGE_ANALYZERS

    for language in [*LANGUAGE_ANALYZERS, "uk", "xx"]:
        for languages in (_languages(**{language: 30}), _languages(**{language: 15, "en": 15})):
            choice = choose(languages, support)
            text_analysis(choice.analyzer, support)  # raises where the cluster lacks what it needs
            assert choice.embedder == MULTILINGUAL_EMBEDDER


@pytest.mark.unit
def test_no_analyzer_for_the_language_says_so():
    choice = choose(_languages(uk=30), FULL)  # Ukrainian: no built-in analyzer
    assert choice.analyzer == "icu_folding" and "no analyzer for Ukrainian" in choice.why


@pytest.mark.unit
@pytest.mark.parametrize("support", [FULL, AnalysisSupport(("analysis-icu",), ("pl_PL",)), NO_COMMON, None])
@pytest.mark.parametrize("name", ["folding", "english", "spanish", "german", *CLUSTER_ANALYZERS])
def test_a_live_analyzer_reads_back_as_the_name_that_renders_it(name, support):
    """spec_analyzer is text_analysis read backwards: the name it gives renders the same analysis."""
    from adapter.errors import ConfigurationError

    try:
        rendered = text_analysis(name, support)
    except ConfigurationError:
        pytest.skip(f"{name} does not render on this cluster")
    back = spec_analyzer(rendered.analyzer, support)
    # the notice names the one asked for
    assert replace(text_analysis(back, support), notices=()) == replace(rendered, notices=())


@pytest.mark.unit
@requires_extra("language")
@pytest.mark.parametrize(
    ("folder", "language"),
    [
        ("soporte-es", "Spanish"),
        ("wsparcie-pl", "Polish"),
        ("parts-en", "English"),
        ("glossary-en", "English"),
        ("pyapi-en", "English"),
    ],
)
def test_the_detector_reads_the_labelled_sets_languages(folder, language):
    from adapter.models.language import detect_languages

    rows = [
        json.loads(line)
        for line in (DATA / folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    languages = detect_languages((f"{r.get('title', '')}\n{r['text']}" for r in rows), source=f"{folder}/corpus.jsonl")
    choice = choose(languages, FULL)
    stems = f"{LANGUAGE_ANALYZERS[languages.top[0]]}_stems" if languages.top else None
    assert choice.analyzer == stems and f"are {language}; {stems} keeps" in choice.why, languages


@pytest.mark.unit
@requires_extra("language")
def test_the_detector_sees_a_mixed_corpus():
    from adapter.models.language import detect_languages

    texts = []
    for folder in ("soporte-es", "wsparcie-pl", "parts-en"):
        lines = (DATA / folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:20]
        texts += [json.loads(line)["text"] for line in lines]
    choice = choose(detect_languages(texts, source="mixed"), PLAIN)
    assert choice.analyzer == "folding" and "mixed" in choice.why
