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

Every chain ends in folding (``icu_folding`` where the cluster has ICU, else ``asciifolding``) so
that a query typed without diacritics (``zrodlo``) matches ``źródło``; stemming runs before it,
on the text as written, since the dictionaries and stemmers know words with their diacritics.
Elasticsearch's plugins register the same names, so every engine renders these the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError

STEMPEL = "analysis-stempel"
ICU = "analysis-icu"
CLUSTER_ANALYZERS = ("polish", "spanish_hunspell", "icu_folding")


@dataclass(frozen=True)
class AnalysisSupport:
    """The text analysis a cluster offers beyond its built-ins (from its capabilities)."""

    plugins: tuple[str, ...] = ()  # analysis plugins (analysis-stempel, analysis-icu, ...)
    hunspell: tuple[str, ...] = ()  # Hunspell locales every node has (pl_PL, es_ES, ...)
    cluster: str = "the cluster"  # for messages: "opensearch 3.6.0"

    @classmethod
    def of(cls, caps) -> AnalysisSupport:
        """From :class:`~adapter.capabilities.Capabilities`."""
        return cls(tuple(p for p in caps.plugins if p.startswith("analysis-")), tuple(caps.hunspell), f"{caps.engine} {caps.version}")

    @property
    def folding(self) -> str:
        return "icu_folding" if ICU in self.plugins else "asciifolding"


@dataclass(frozen=True)
class TextAnalysis:
    """What the text fields use: the analyzer name and the index analysis settings it needs."""

    analyzer: str
    filters: dict[str, Any]
    analyzers: dict[str, Any]


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
    if not needs_cluster(analyzer):
        return TextAnalysis(analyzer, {}, {})
    if support is None:
        raise ConfigurationError(
            f"analyzer {analyzer!r} is rendered from what the cluster has (analysis plugins, Hunspell dictionaries); "
            "render it for a cluster: `hybrid init` probes it, `hybrid render` takes --plugin and --hunspell"
        )
    fold = support.folding
    if analyzer == "polish":
        if STEMPEL in support.plugins:
            return TextAnalysis("polish_folding", {}, {"polish_folding": _custom(["lowercase", "polish_stop", "polish_stem", fold])})
        if "pl_PL" in support.hunspell:
            return TextAnalysis("polish_hunspell", {"pl_stem": _hunspell("pl_PL")},
                                {"polish_hunspell": _custom(["lowercase", "pl_stem", fold])})
        raise ConfigurationError(
            f"analyzer 'polish' needs the {STEMPEL} plugin (bin/opensearch-plugin install {STEMPEL}; Amazon OpenSearch "
            "Service has it) or a Hunspell pl_PL dictionary in config/hunspell/pl_PL on every node, advertised with the "
            f"node attribute hunspell: pl_PL (`hybrid local up` does both); {support.cluster} has neither "
            f"(analysis plugins: {', '.join(support.plugins) or 'none'}; Hunspell: {', '.join(support.hunspell) or 'none'})"
        )
    if analyzer == "spanish_hunspell":
        if "es_ES" in support.hunspell:
            return TextAnalysis("spanish_hunspell", {"es_stem": _hunspell("es_ES")},
                                {"spanish_hunspell": _custom(["lowercase", "es_stem", fold])})
        raise ConfigurationError(
            "analyzer 'spanish_hunspell' needs a Hunspell es_ES dictionary in config/hunspell/es_ES on every node, advertised "
            f"with the node attribute hunspell: es_ES; {support.cluster} has {', '.join(support.hunspell) or 'none'}. "
            "The built-in 'spanish' analyzer needs nothing"
        )
    if ICU in support.plugins:
        return TextAnalysis("icu_folded", {}, {"icu_folded": _custom(["icu_folding"], tokenizer="icu_tokenizer")})
    raise ConfigurationError(
        f"analyzer 'icu_folding' needs the {ICU} plugin (bin/opensearch-plugin install {ICU}; Amazon OpenSearch Service has "
        f"it); {support.cluster} lacks it. The 'folding' analyzer (lowercase + asciifolding) needs nothing"
    )
