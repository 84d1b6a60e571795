"""Text analyzers that depend on what the cluster has: Polish, Spanish by dictionary, ICU folding. Pure.

``IndexSpec.analyzer`` names either an analyzer every cluster has (``folding``, defined by the text
component asset; the built-in language analyzers such as ``english`` or ``spanish``), or one of
:data:`CLUSTER_ANALYZERS`, rendered here from :class:`AnalysisSupport` (what the capability probe
found: plugins and the Hunspell dictionaries the nodes advertise):

- ``polish``: with the ``analysis-stempel`` plugin, its ``polish_stop`` and ``polish_stem``
  filters; else a Hunspell ``pl_PL`` dictionary (core, no plugin: ``config/hunspell/pl_PL``, named
  by the node attribute ``hunspell``, as ``hybrid local up`` does); else an error naming both.
- ``spanish_hunspell``: the Hunspell ``es_ES`` dictionary (full-word stems instead of the built-in
  ``spanish`` analyzer's light stemmer).
- ``icu_folding``: ``icu_tokenizer`` + ``icu_folding`` (``analysis-icu``).
- :data:`STEMS_ANALYZERS` (``english_stems``, ``spanish_stems``, ``german_stems``, ``polish_stems``):
  the language's stems beside the words as written, in one field: ``lowercase``, ``keyword_repeat``
  (each token twice, one copy keyword-marked, which the stemmers skip), the stemmer the language's
  built-in analyzer uses (English: ``possessive_english`` before, Porter; Spanish: ``light_spanish``;
  German: ``german_normalization``, ``light_german``; Polish: as ``polish`` above), folding, then
  ``remove_duplicates`` (the two copies where the stemmer left the word as it was). So ``haslo`` typed
  without accents matches the folded word ``hasło`` as written, and ``hasła`` its stem. No stop words (the
  words as written stay whole). ``keyword_repeat`` and ``remove_duplicates`` live in analysis-common: a
  cluster without it cannot render these (refused, naming it).

Every chain ends in folding (``icu_folding`` where the cluster has ICU, else ``asciifolding``) so
that a query typed without diacritics (``zrodlo``) matches ``źródło``; stemming runs before it,
on the text as written, since the dictionaries and stemmers know words with their diacritics.
Elasticsearch's plugins register the same names, so every engine renders these the same way.

Without the ``analysis-common`` module (Elasticsearch's integ-test zip, ``hybrid local up --distribution
elasticsearch``) the language analyzers, ``asciifolding`` and the stemmers are missing; then:

- a language with a Hunspell dictionary on every node is rebuilt from core parts (standard
  tokenizer, ``lowercase``, the language's ``stop`` list, ``hunspell`` stems), under another name
  (``spanish_hunspell``), and said in a notice;
- ``folding`` keeps ``lowercase`` but cannot fold accents (café and cafe stay different): said in a
  notice, never silently;
- any other language analyzer is refused, naming what the cluster can run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol

from adapter.errors import ConfigurationError

STEMPEL = "analysis-stempel"
ICU = "analysis-icu"
# The language's stems beside the words as written (docs/EVALUATION.md, candidate E): name -> the filters between
# keyword_repeat and folding, as the language's built-in analyzer stems (Lucene's EnglishAnalyzer: possessive, then
# Porter; SpanishAnalyzer: light; GermanAnalyzer: normalization, light). Polish's stemmer depends on the cluster.
STEMS_ANALYZERS = ("english_stems", "spanish_stems", "german_stems", "polish_stems")
_STEMMERS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "english_stems": ({"en_stem": {"type": "stemmer", "language": "english"}}, ["en_stem"]),
    "spanish_stems": ({"es_light_stem": {"type": "stemmer", "language": "light_spanish"}}, ["es_light_stem"]),
    "german_stems": (
        {"de_light_stem": {"type": "stemmer", "language": "light_german"}},
        ["german_normalization", "de_light_stem"],
    ),
}
CLUSTER_ANALYZERS = ("polish", "spanish_hunspell", "icu_folding", *STEMS_ANALYZERS)
FOLDING = "folding"
# Analyzers in every Elasticsearch/OpenSearch core: no module needed.
CORE_ANALYZERS = ("standard", "simple", "whitespace", "stop", "keyword")
# Languages rebuilt from Hunspell where analysis-common is absent: (locale, core stop-word list).
HUNSPELL_LANGUAGES = {
    "spanish": ("es_ES", "_spanish_"),
    "spanish_hunspell": ("es_ES", "_spanish_"),
    "polish": ("pl_PL", None),
}


class ClusterAnalysisFacts(Protocol):
    """What :meth:`AnalysisSupport.of` reads of a cluster: :class:`adapter.engines.capabilities.Capabilities`
    has these (a structural type, so the index's pure modules import nothing from the engines above them)."""

    @property
    def plugins(self) -> tuple[str, ...]: ...
    @property
    def hunspell(self) -> tuple[str, ...]: ...
    @property
    def engine(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def analysis_common(self) -> bool: ...


@dataclass(frozen=True)
class AnalysisSupport:
    """The text analysis a cluster offers beyond its built-ins (from its capabilities)."""

    plugins: tuple[str, ...] = ()  # analysis plugins (analysis-stempel, analysis-icu, ...)
    hunspell: tuple[str, ...] = ()  # Hunspell locales every node has (pl_PL, es_ES, ...)
    cluster: str = "the cluster"  # for messages: "opensearch 3.6.0"
    analysis_common: bool = True  # the analysis-common module: language analyzers, asciifolding, stemmers

    @classmethod
    def of(cls, caps: ClusterAnalysisFacts) -> AnalysisSupport:
        """From a cluster's :class:`~adapter.engines.capabilities.Capabilities`."""
        return cls(
            tuple(p for p in caps.plugins if p.startswith("analysis-")),
            tuple(caps.hunspell),
            f"{caps.engine} {caps.version}",
            analysis_common=caps.analysis_common,
        )

    @property
    def folding(self) -> str | None:
        """The folding filter the cluster has (None: neither ICU nor analysis-common)."""
        return "icu_folding" if ICU in self.plugins else "asciifolding" if self.analysis_common else None


@dataclass(frozen=True)
class TextAnalysis:
    """What the text fields use: the analyzer name and the index analysis settings it needs."""

    analyzer: str
    filters: dict[str, Any]
    analyzers: dict[str, Any]
    # True: the filters and analyzers replace the text asset's analysis block (whose ``folding``
    # needs asciifolding); else they are added to it.
    own_block: bool = False
    notices: tuple[str, ...] = ()  # how it differs from the analyzer asked for, for `init` to say


def needs_cluster(analyzer: str) -> bool:
    """Whether ``analyzer`` is rendered from what the cluster has."""
    return analyzer in CLUSTER_ANALYZERS


def _hunspell(locale: str) -> dict[str, Any]:
    return {"type": "hunspell", "locale": locale, "dedup": True}


def _custom(filters: list[str], tokenizer: str = "standard") -> dict[str, Any]:
    return {"type": "custom", "tokenizer": tokenizer, "filter": filters}


def text_analysis(analyzer: str, support: AnalysisSupport | None) -> TextAnalysis:
    """The analysis behind ``analyzer`` on a cluster with ``support`` (None: not known yet).

    Raises :class:`ConfigurationError` naming what the cluster lacks, or that the cluster must be
    known first.
    """
    if support is not None and not support.analysis_common:
        return _without_common(analyzer, support)
    if not needs_cluster(analyzer):
        return TextAnalysis(analyzer, {}, {})
    if support is None:
        raise ConfigurationError(
            f"analyzer {analyzer!r} is rendered from what the cluster has (analysis plugins, Hunspell dictionaries); "
            "render it for a cluster: `hybrid init` probes it, `hybrid render` takes --plugin and --hunspell"
        )
    fold = support.folding or "asciifolding"  # analysis-common is there (checked above)
    if analyzer in STEMS_ANALYZERS:
        return _stems(analyzer, support, fold)
    if analyzer == "polish":
        if STEMPEL in support.plugins:
            return TextAnalysis(
                "polish_folding", {}, {"polish_folding": _custom(["lowercase", "polish_stop", "polish_stem", fold])}
            )
        if "pl_PL" in support.hunspell:
            return TextAnalysis(
                "polish_hunspell",
                {"pl_stem": _hunspell("pl_PL")},
                {"polish_hunspell": _custom(["lowercase", "pl_stem", fold])},
            )
        raise ConfigurationError(
            f"analyzer 'polish' needs the {STEMPEL} plugin (bin/opensearch-plugin install {STEMPEL}; Amazon OpenSearch "
            "Service has it) or a Hunspell pl_PL dictionary in config/hunspell/pl_PL on every node, advertised with "
            f"the node attribute hunspell: pl_PL (`hybrid local up` does both); {support.cluster} has neither "
            f"(analysis plugins: {', '.join(support.plugins) or 'none'}; Hunspell: "
            f"{', '.join(support.hunspell) or 'none'})"
        )
    if analyzer == "spanish_hunspell":
        if "es_ES" in support.hunspell:
            return TextAnalysis(
                "spanish_hunspell",
                {"es_stem": _hunspell("es_ES")},
                {"spanish_hunspell": _custom(["lowercase", "es_stem", fold])},
            )
        raise ConfigurationError(
            "analyzer 'spanish_hunspell' needs a Hunspell es_ES dictionary in config/hunspell/es_ES on every node, "
            f"advertised with the node attribute hunspell: es_ES; {support.cluster} has "
            f"{', '.join(support.hunspell) or 'none'}. The built-in 'spanish' analyzer needs nothing"
        )
    if ICU in support.plugins:
        return TextAnalysis("icu_folded", {}, {"icu_folded": _custom(["icu_folding"], tokenizer="icu_tokenizer")})
    raise ConfigurationError(
        f"analyzer 'icu_folding' needs the {ICU} plugin (bin/opensearch-plugin install {ICU}; Amazon OpenSearch "
        f"Service has it); {support.cluster} lacks it. The 'folding' analyzer (lowercase + asciifolding) needs nothing"
    )


def _stems(name: str, support: AnalysisSupport, fold: str) -> TextAnalysis:
    """One of :data:`STEMS_ANALYZERS` on a cluster with analysis-common (keyword_repeat, remove_duplicates)."""
    if name == "polish_stems" and STEMPEL in support.plugins:
        filters: dict[str, Any] = {}
        stem = ["polish_stem"]
    elif name == "polish_stems":
        filters, stem = text_analysis("polish", support).filters, ["pl_stem"]  # Hunspell pl_PL, or the error
    else:
        filters, stem = copy.deepcopy(_STEMMERS[name][0]), _STEMMERS[name][1]
    chain = ["lowercase", "keyword_repeat", *stem, fold, "remove_duplicates"]
    if name == "english_stems":  # the English analyzer drops "'s" before anything else
        filters["en_possessive"] = {"type": "stemmer", "language": "possessive_english"}
        chain.insert(0, "en_possessive")
    return TextAnalysis(name, filters, {name: _custom(chain)})


def _stems_need_common(name: str, where: str) -> ConfigurationError:
    return ConfigurationError(
        f"analyzer {name!r} needs keyword_repeat and remove_duplicates from the analysis-common module; {where}. "
        f"Use one of {', '.join((FOLDING, *CORE_ANALYZERS))}, or {', '.join(sorted(HUNSPELL_LANGUAGES))} "
        "(Hunspell), or a cluster with analysis-common"
    )


def _without_common(name: str, support: AnalysisSupport) -> TextAnalysis:
    """``name`` on a cluster without analysis-common: rebuilt from core parts, or refused."""
    where = f"this cluster ({support.cluster}) has no analysis-common module"
    fold = support.folding  # icu_folding with the ICU plugin, else nothing
    if name == FOLDING:
        filters = ["lowercase", *([fold] if fold else [])]
        notices = (
            ()
            if fold
            else (
                f"analyzer folding: {where}, so there is no asciifolding: text is lowercased but accents are "
                "NOT folded (café and cafe are different words to BM25)",
            )
        )
        return TextAnalysis(FOLDING, {}, {FOLDING: _custom(filters)}, own_block=True, notices=notices)
    if name in CORE_ANALYZERS:
        return TextAnalysis(name, {}, {}, own_block=True)
    if name == "icu_folding" and ICU in support.plugins:
        return TextAnalysis(
            "icu_folded", {}, {"icu_folded": _custom(["icu_folding"], tokenizer="icu_tokenizer")}, own_block=True
        )
    if name in STEMS_ANALYZERS:
        raise _stems_need_common(name, where)
    if name in HUNSPELL_LANGUAGES:
        locale, stopwords = HUNSPELL_LANGUAGES[name]
        if locale not in support.hunspell:
            raise ConfigurationError(
                f"analyzer {name!r} needs the analysis-common module or the {locale} Hunspell dictionary on every "
                f"node; {where} and advertises Hunspell dictionaries for "
                f"{', '.join(support.hunspell) or 'no language'} (node attribute hunspell). Use one of "
                f"{', '.join((FOLDING, *CORE_ANALYZERS))}, or a cluster with analysis-common"
            )
        base = name.removesuffix("_hunspell")
        analyzer, stop, stem = f"{base}_hunspell", f"{base}_stop", f"{base}_hunspell_stem"
        own: dict[str, Any] = {stem: _hunspell(locale)}
        chain = ["lowercase"]
        if stopwords:
            own[stop] = {"type": "stop", "stopwords": stopwords}
            chain.append(stop)
        chain += [stem, *([fold] if fold else [])]
        return TextAnalysis(
            analyzer,
            own,
            {analyzer: _custom(chain)},
            own_block=True,
            notices=(
                f"analyzer {name}: {where}, so it is rebuilt from core parts as {analyzer} (standard tokenizer, "
                "lowercase, "
                + (f"{stopwords} stop words, " if stopwords else "")
                + f"Hunspell {locale} stems)"
                + ("" if fold else "; accents are not folded"),
            ),
        )
    raise ConfigurationError(
        f"analyzer {name!r} lives in the analysis-common module; {where}. Use one of "
        f"{', '.join((FOLDING, *CORE_ANALYZERS))}, or {', '.join(sorted(HUNSPELL_LANGUAGES))} (Hunspell), or a cluster "
        "with analysis-common"
    )


def spec_analyzer(field_analyzer: str, support: AnalysisSupport | None) -> str:
    """The ``--analyzer`` name that renders as ``field_analyzer`` (what a text field's mapping names) on a
    cluster with ``support``: the inverse of :func:`text_analysis` (``polish_hunspell`` -> ``polish``,
    ``icu_folded`` -> ``icu_folding``); a name nothing renders to is its own (``english``, ``folding``)."""
    for name in (*CLUSTER_ANALYZERS, *HUNSPELL_LANGUAGES):
        try:
            if text_analysis(name, support).analyzer == field_analyzer:
                return name
        except ConfigurationError:  # the cluster cannot run it, so it did not render this index
            continue
    return field_analyzer
