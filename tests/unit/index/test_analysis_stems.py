"""The language's stems beside the words as written (adapter.index.analysis.STEMS_ANALYZERS, docs/EVALUATION.md
candidate E): the settings each renders, per cluster. What the chains do to `haslo` / `hasła` / `hasło` on a real
node is checked in tests/integration/test_analysis_choice.py."""

from __future__ import annotations

import pytest

from adapter.errors import ConfigurationError
from adapter.index.analysis import STEMS_ANALYZERS, AnalysisSupport, spec_analyzer, text_analysis

HUNSPELL = AnalysisSupport((), ("pl_PL", "es_ES"), "opensearch 3.6.0")
STEMPEL_ICU = AnalysisSupport(("analysis-icu", "analysis-stempel"), (), "opensearch 3.6.0")
NO_COMMON = AnalysisSupport((), ("es_ES", "pl_PL"), "elasticsearch 9.2.4", analysis_common=False)


def _chain(name: str, support: AnalysisSupport) -> list[str]:
    rendered = text_analysis(name, support)
    analyzer = rendered.analyzers[rendered.analyzer]
    assert analyzer["type"] == "custom" and analyzer["tokenizer"] == "standard"
    return list(analyzer["filter"])


@pytest.mark.unit
def test_each_chain_repeats_stems_folds_then_drops_duplicates():
    assert _chain("spanish_stems", HUNSPELL) == [
        "lowercase",
        "keyword_repeat",
        "es_light_stem",
        "asciifolding",
        "remove_duplicates",
    ]
    assert _chain("german_stems", HUNSPELL) == [
        "lowercase",
        "keyword_repeat",
        "german_normalization",
        "de_light_stem",
        "asciifolding",
        "remove_duplicates",
    ]
    assert _chain("english_stems", HUNSPELL) == [
        "en_possessive",
        "lowercase",
        "keyword_repeat",
        "en_stem",
        "asciifolding",
        "remove_duplicates",
    ]
    assert _chain("polish_stems", HUNSPELL) == [
        "lowercase",
        "keyword_repeat",
        "pl_stem",
        "asciifolding",
        "remove_duplicates",
    ]


@pytest.mark.unit
def test_the_stemmers_are_the_built_in_analyzers_own():
    """The stemmer each built-in language analyzer uses (Lucene's SpanishAnalyzer: light; GermanAnalyzer: light;
    EnglishAnalyzer: possessive, then Porter, which the stemmer filter calls `english`)."""
    assert text_analysis("spanish_stems", HUNSPELL).filters == {
        "es_light_stem": {"type": "stemmer", "language": "light_spanish"}
    }
    assert text_analysis("german_stems", HUNSPELL).filters == {
        "de_light_stem": {"type": "stemmer", "language": "light_german"}
    }
    assert text_analysis("english_stems", HUNSPELL).filters == {
        "en_stem": {"type": "stemmer", "language": "english"},
        "en_possessive": {"type": "stemmer", "language": "possessive_english"},
    }
    assert text_analysis("polish_stems", HUNSPELL).filters == {
        "pl_stem": {"type": "hunspell", "locale": "pl_PL", "dedup": True}
    }


@pytest.mark.unit
def test_polish_takes_stempel_and_icu_where_the_cluster_has_them():
    rendered = text_analysis("polish_stems", STEMPEL_ICU)
    assert rendered.filters == {}  # polish_stem is the plugin's own
    assert _chain("polish_stems", STEMPEL_ICU) == [
        "lowercase",
        "keyword_repeat",
        "polish_stem",
        "icu_folding",
        "remove_duplicates",
    ]
    with pytest.raises(ConfigurationError, match="analysis-stempel"):
        text_analysis("polish_stems", AnalysisSupport((), ("es_ES",)))


@pytest.mark.unit
def test_the_rendered_settings_are_fresh_copies():
    first = text_analysis("spanish_stems", HUNSPELL)
    first.filters["es_light_stem"]["language"] = "spanish"
    assert text_analysis("spanish_stems", HUNSPELL).filters["es_light_stem"]["language"] == "light_spanish"


@pytest.mark.unit
@pytest.mark.parametrize("name", STEMS_ANALYZERS)
def test_without_analysis_common_they_are_refused_naming_it(name):
    with pytest.raises(ConfigurationError, match="keyword_repeat and remove_duplicates from the analysis-common"):
        text_analysis(name, NO_COMMON)
    with pytest.raises(ConfigurationError, match="rendered from what the cluster has"):
        text_analysis(name, None)


@pytest.mark.unit
@pytest.mark.parametrize("name", STEMS_ANALYZERS)
def test_the_live_field_reads_back_as_its_name(name):
    assert spec_analyzer(text_analysis(name, HUNSPELL).analyzer, HUNSPELL) == name
