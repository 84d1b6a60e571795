"""The one rule for a new index's analyzer and embedder when the user names neither. Pure.

Every entrance that makes an index (``hybrid init``, the first ``hybrid ingest`` into an index
``init`` made before any document existed, ``hybrid eval``, ``hybrid plan --write-spec``, the
Python API's :func:`adapter.choose_analysis`) calls :func:`choose` with the languages of a sample of
the documents (:class:`Languages`, counted by :mod:`adapter.models.language`) and what the cluster can
run (:class:`~adapter.index.analysis.AnalysisSupport`):

- one language (at least :data:`ONE_LANGUAGE_SHARE` of the sampled documents) that the cluster has an
  analyzer for (:data:`LANGUAGE_ANALYZERS`; Polish through ``analysis-stempel`` or a Hunspell ``pl_PL``
  dictionary): for English, Spanish, German and Polish (:data:`STEMS`) where the cluster renders it
  (analysis-common), ``<language>_stems``: the words as written, folded, beside their stems in one field
  (:mod:`adapter.index.analysis`); else ``folding``, not the language's analyzer. Measured
  (docs/EVALUATION.md, issue 39), with the default hybrid and ``multilingual-e5-small``: the language's
  analyzer alone lost to folding by up to 0.056 nDCG@10 (users type without accents, and codes and names are
  not words to stem), folding lost to stems on a code-heavy Polish set (0.036-0.041) and a parts catalogue
  (0.025); the stems beside the words had the smaller worst shortfall on ten labelled sets (0.019 against
  folding's 0.041; they trail folding by 0.015-0.019 on three support sets) and were picked in every
  leave-one-set-out fold. Where the standard tokenizer cannot find the words (:data:`UNSPACED`: Chinese,
  Japanese, Korean, Thai): their analyzer, unmeasured;
- one language the cluster has no analyzer for: as for several;
- several languages: ``icu_folding`` where the cluster has ``analysis-icu``, else ``folding``;
- no sample (no document yet, or no detector installed): :data:`DEFAULT_ANALYZER`.

The embedder is :data:`MULTILINGUAL_EMBEDDER` in every case: it is the project's one default
(:func:`adapter.models.embedders.default_embedder`), it reads every language the detector names, and
a corpus that later gains a language keeps working. MiniLM for English corpora was measured and not
taken: 0.035-0.056 below it on a catalogue searched by part numbers (parts-en), for 0.004-0.008 above on one set (med).
An index that already exists keeps its own
analyzer and embedder (:mod:`adapter.index.live` reads them); a name the user gives always wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from adapter.errors import ConfigurationError
from adapter.index.analysis import HUNSPELL_LANGUAGES, ICU, STEMPEL, AnalysisSupport, text_analysis

DEFAULT_ANALYZER = "folding"  # lowercase + accent folding: right for no language in particular, wrong for none
MULTILINGUAL_EMBEDDER = "multilingual-e5-small"
# A corpus is "in one language" when this share of the sampled documents is; support articles quote
# English error messages and code, so a Spanish help centre is rarely 100% Spanish.
ONE_LANGUAGE_SHARE = 0.8
MIN_DOCUMENTS = 3  # fewer texts than this say nothing about a corpus
SAMPLE_DOCUMENTS = 200  # how many documents a choice reads (the detector classifies ~10,000 a second)

# ISO 639-1 (what the detector answers) -> the language analyzer OpenSearch and Elasticsearch build in
# (analysis-common), or one rendered from the cluster (polish: adapter.index.analysis).
LANGUAGE_ANALYZERS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "bn": "bengali",
    "bg": "bulgarian",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "fi": "finnish",
    "fr": "french",
    "gl": "galician",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lv": "latvian",
    "lt": "lithuanian",
    "no": "norwegian",
    "nb": "norwegian",
    "fa": "persian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "es": "spanish",
    "sv": "swedish",
    "tr": "turkish",
    "th": "thai",
    "zh": "cjk",
    "ja": "cjk",
    "ko": "cjk",
    "pl": "polish",
}
LANGUAGE_NAMES = {
    "ar": "Arabic",
    "hy": "Armenian",
    "eu": "Basque",
    "bn": "Bengali",
    "bg": "Bulgarian",
    "ca": "Catalan",
    "cs": "Czech",
    "da": "Danish",
    "nl": "Dutch",
    "en": "English",
    "fi": "Finnish",
    "fr": "French",
    "gl": "Galician",
    "de": "German",
    "el": "Greek",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "ga": "Irish",
    "it": "Italian",
    "lv": "Latvian",
    "lt": "Lithuanian",
    "no": "Norwegian",
    "nb": "Norwegian",
    "fa": "Persian",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "es": "Spanish",
    "sv": "Swedish",
    "tr": "Turkish",
    "th": "Thai",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "pl": "Polish",
    "uk": "Ukrainian",
}
OVERRIDE = "--analyzer / --embedder to choose"
# The language's stems beside the words as written (adapter.index.analysis.STEMS_ANALYZERS): the measured languages.
STEMS = {"en": "english_stems", "es": "spanish_stems", "de": "german_stems", "pl": "polish_stems"}
# Written without spaces between words: the standard tokenizer under folding cannot split them, their analyzer can.
UNSPACED = frozenset({"zh", "ja", "ko", "th"})


@dataclass(frozen=True)
class Languages:
    """How many of the sampled documents are in each language (ISO 639-1), most first."""

    counts: tuple[tuple[str, int], ...]
    source: str = "the documents"  # for messages: "200 documents of docs.jsonl"

    @property
    def documents(self) -> int:
        return sum(n for _, n in self.counts)

    @property
    def top(self) -> tuple[str, float] | None:
        """The most frequent language and its share (None: nothing was classified)."""
        if not self.counts:
            return None
        language, n = self.counts[0]
        return language, n / self.documents

    def describe(self, most: int = 3) -> str:
        """``96% Spanish, 4% English``."""
        total = self.documents or 1
        return ", ".join(f"{round(100 * n / total)}% {language_name(lang)}" for lang, n in self.counts[:most])

    def to_meta(self) -> dict[str, Any]:
        return {"source": self.source, "documents": self.documents, "languages": dict(self.counts)}


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


@dataclass(frozen=True)
class AnalysisChoice:
    """What a new index gets when the user names neither analyzer nor embedder, and why."""

    analyzer: str
    embedder: str
    why: str  # "97% of 200 documents of docs.jsonl are Spanish"
    languages: Languages | None = None

    def line(self, *, override: str = OVERRIDE) -> str:
        """The one line every command prints."""
        return f"analyzer: {self.analyzer}, embedder: {self.embedder} ({self.why}; {override})"

    def to_meta(self) -> dict[str, Any]:
        """What the index records of the choice (``_meta.analysis``)."""
        out: dict[str, Any] = {"analyzer": self.analyzer, "embedder": self.embedder, "why": self.why}
        if self.languages is not None:
            out.update(self.languages.to_meta())
        return out


def language_analyzer(language: str, support: AnalysisSupport) -> tuple[str | None, str]:
    """The analyzer for ``language`` on a cluster with ``support``: (name, "") or (None, why not)."""
    name = LANGUAGE_ANALYZERS.get(language)
    if name is None:
        return None, f"no analyzer for {language_name(language)} in OpenSearch or Elasticsearch"
    if name == "polish":
        if STEMPEL in support.plugins or "pl_PL" in support.hunspell:
            return name, ""
        return None, f"{support.cluster} has no Polish stemmer ({STEMPEL}, or a Hunspell pl_PL dictionary)"
    if support.analysis_common:
        return name, ""
    locale = HUNSPELL_LANGUAGES.get(name, (None, None))[0]
    if locale and locale in support.hunspell:
        return name, ""  # rebuilt from its Hunspell dictionary (adapter.index.analysis)
    return None, f"{support.cluster} has no analysis-common module, so no {name} analyzer"


def stems_analyzer(language: str, support: AnalysisSupport) -> str | None:
    """``<language>_stems`` where there is one for ``language`` and the cluster renders it, else None."""
    name = STEMS.get(language)
    if name is None:
        return None
    try:
        text_analysis(name, support)
    except ConfigurationError:  # no analysis-common (keyword_repeat, remove_duplicates), or no Polish stemmer
        return None
    return name


def mixed_analyzer(support: AnalysisSupport) -> str:
    """Several languages: ICU's tokenizer and folding where the cluster has them, else folding."""
    return "icu_folding" if ICU in support.plugins else DEFAULT_ANALYZER


def choose(languages: Languages | None, support: AnalysisSupport) -> AnalysisChoice:
    """The analyzer and embedder for documents in ``languages`` (None: no sample) on ``support``'s cluster."""
    embedder = MULTILINGUAL_EMBEDDER
    if languages is None or languages.documents < MIN_DOCUMENTS:
        n = 0 if languages is None else languages.documents
        why = (
            "no documents to read the language from yet"
            if not n
            else f"only {n} document{'s' * (n != 1)} to read the language from"
        )
        return AnalysisChoice(DEFAULT_ANALYZER, embedder, why, languages)
    top = languages.top
    assert top is not None  # documents >= MIN_DOCUMENTS
    language, share = top
    if share < ONE_LANGUAGE_SHARE:
        mixed = mixed_analyzer(support)
        return AnalysisChoice(
            mixed,
            embedder,
            f"{languages.source}: {languages.describe()}: mixed, so "
            f"{'ICU folding' if mixed == 'icu_folding' else 'folding'} and a multilingual embedder",
            languages,
        )
    analyzer, why_not = language_analyzer(language, support)
    verb = "is" if languages.documents == 1 else "are"
    said = f"{round(100 * share)}% of {languages.source} {verb} {language_name(language)}"
    if analyzer is None:
        return AnalysisChoice(mixed_analyzer(support), embedder, f"{said}, but {why_not}", languages)
    if language in UNSPACED:
        return AnalysisChoice(analyzer, embedder, said, languages)
    stems = stems_analyzer(language, support)
    if stems is not None:
        return AnalysisChoice(
            stems,
            embedder,
            f"{said}; {stems} keeps the words as written (folded) beside their {analyzer} stems (docs/EVALUATION.md)",
            languages,
        )
    if language in STEMS:  # measured with stems, which this cluster cannot build: folding, rule C's choice
        why = f"{said}; {STEMS[language]} needs the analysis-common module, which {support.cluster} lacks, so folding"
    else:  # not measured with stems: rule C (folding ranked with the language's analyzer or above it)
        why = f"{said}; folding ranks as well as {analyzer} or better (docs/EVALUATION.md)"
    return AnalysisChoice(DEFAULT_ANALYZER, embedder, why, languages)


def recorded_choice(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The choice an index recorded (``_meta.analysis``), or None."""
    value = meta.get("analysis")
    return value if isinstance(value, Mapping) else None


PENDING = "pending"  # _meta.analysis.status of an index made before any document: the first ingest chooses
