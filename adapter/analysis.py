"""Text analyzers as a cluster can run them. Pure.

The one place that turns an :class:`~adapter.assets.IndexSpec`'s analyzer name into the analyzer
the text fields name and the ``analysis`` settings that define it, from what the cluster has
(:class:`~adapter.capabilities.Capabilities`: ``analysis_common``, ``hunspell``). Every engine
renders its text component through it.

The language analyzers (``english``, ``spanish``...), ``asciifolding`` and the stemmers live in
the ``analysis-common`` module: OpenSearch and Elasticsearch's full distribution have it,
Elasticsearch's integ-test zip (``hybrid local up --engine elasticsearch``) does not. Without it:

- a language with a Hunspell dictionary on every node is rebuilt from core parts (standard
  tokenizer, ``lowercase``, the language's ``stop`` list, ``hunspell`` stems), under another name
  (``spanish_hunspell``), and said in a notice;
- ``folding`` keeps ``lowercase`` but cannot fold accents (café and cafe stay different): said in a
  notice, never silently;
- any other language analyzer is refused, naming what the cluster can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError

if TYPE_CHECKING:
    from .capabilities import Capabilities

FOLDING = "folding"
# Analyzers in every Elasticsearch/OpenSearch core: no module needed.
CORE_ANALYZERS = ("standard", "simple", "whitespace", "stop", "keyword")
# Languages rebuilt from Hunspell where analysis-common is absent: (locale, core stop-word list).
HUNSPELL_LANGUAGES = {"spanish": ("es_ES", "_spanish_")}


@dataclass(frozen=True)
class Analysis:
    """What the text fields use: ``analyzer`` (the name they carry), ``settings`` (the ``analysis``
    block that defines it; None: the text component asset's own, which defines ``folding`` with
    asciifolding; empty: nothing to define), and ``notices`` (how it differs from the analyzer
    asked for, for ``init`` to say)."""

    analyzer: str
    settings: dict[str, Any] | None = None
    notices: tuple[str, ...] = ()


def render_analysis(name: str, caps: Capabilities | None = None) -> Analysis:
    """``name`` as the cluster described by ``caps`` can run it (None: a cluster with analysis-common)."""
    if caps is None or caps.analysis_common:
        return Analysis(name)  # the asset's analysis block (folding), whatever the fields use

    where = f"this cluster ({caps.engine} {caps.version}) has no analysis-common module"
    if name == FOLDING:
        settings = {"analyzer": {FOLDING: {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}}}
        return Analysis(FOLDING, settings, (
            f"analyzer folding: {where}, so there is no asciifolding: text is lowercased but accents are NOT folded "
            "(café and cafe are different words to BM25)",))
    if name in CORE_ANALYZERS:
        return Analysis(name, {})
    if name in HUNSPELL_LANGUAGES:
        locale, stopwords = HUNSPELL_LANGUAGES[name]
        if locale not in caps.hunspell:
            raise ConfigurationError(
                f"analyzer {name!r} needs the analysis-common module or the {locale} Hunspell dictionary on every node; {where} "
                f"and advertises Hunspell dictionaries for {', '.join(caps.hunspell) or 'no language'} (node attribute hunspell). "
                f"Use one of {', '.join((FOLDING, *CORE_ANALYZERS))}, or a cluster with analysis-common"
            )
        analyzer, stop, stem = f"{name}_hunspell", f"{name}_stop", f"{name}_hunspell_stem"
        settings = {
            "filter": {stop: {"type": "stop", "stopwords": stopwords}, stem: {"type": "hunspell", "locale": locale, "dedup": True}},
            "analyzer": {analyzer: {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", stop, stem]}},
        }
        return Analysis(analyzer, settings, (
            f"analyzer {name}: {where}, so it is rebuilt from core parts as {analyzer} (standard tokenizer, lowercase, "
            f"{stopwords} stop words, Hunspell {locale} stems); accents are not folded",))
    raise ConfigurationError(
        f"analyzer {name!r} lives in the analysis-common module; {where}. Use one of {', '.join((FOLDING, *CORE_ANALYZERS))}"
        + (f", or {', '.join(sorted(HUNSPELL_LANGUAGES))} (Hunspell)" if HUNSPELL_LANGUAGES else "")
        + ", or a cluster with analysis-common"
    )
