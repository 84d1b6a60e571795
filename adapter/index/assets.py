"""Loading and rendering the JSON assets in ``mappings/`` and ``pipelines/``. Pure: no I/O but reads.

The assets are the source of truth reviewed in git. Rendering fills the variable parts (names,
analyzer, vector dimension, fusion parameters) on parsed dicts, never by string replacement, and
always returns fresh copies. What every engine shares (names, the index spec, the text and metadata
components, the index template) is rendered here; what differs (the vector field, search
pipelines) is rendered by the engine (:mod:`adapter.engines`). In an installed wheel the assets sit in
``adapter/_assets``; in a source checkout they are read from the repository root.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapter._renamed import keep_old_field_name
from adapter.errors import AssetError, ConfigurationError, InputError
from adapter.fusion import parse_fusion
from adapter.fusion.choice.defaults import default_fusion_name
from adapter.fusion.choice.values import ADAPTIVE
from adapter.index.analysis import AnalysisSupport, ClusterAnalysisFacts, text_analysis
from adapter.index.documents import DocumentLayout
from adapter.index.language import DEFAULT_ANALYZER
from adapter.models.fingerprint import EmbeddingFingerprint

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from adapter.fusion import Fusion

ASSET_DIRS = ("mappings", "pipelines")
SPACE_TYPES = ("cosinesimil", "innerproduct", "l2")
KNN_METHODS = ("lucene", "faiss", "nmslib")  # the k-NN plugin's method engines (its word: method.engine)
COMPONENTS = ("text", "vector", "metadata")
SCHEMA_VERSION = 1
# How the BM25 leg reads the text fields: "fields" (multi_match most_fields over each field, the
# title boosted by title_boost) or "combined" (every text field copied into one field by copy_to,
# so BM25 sees one document length; match on that field).
TEXT_LAYOUTS = ("fields", "combined")
COMBINED_FIELD = "all_text"


def _asset_root(kind: str) -> Traversable:
    packaged = resources.files("adapter") / "_assets" / kind
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / kind  # adapter/index/assets.py -> the repository
    if source.is_dir():
        return source
    raise AssetError(f"asset folder {kind!r} not found in the package or next to it")


@lru_cache(maxsize=None)
def _load_cached(kind: str, name: str) -> str:
    if kind not in ASSET_DIRS:
        raise AssetError(f"unknown asset kind {kind!r}")
    path = _asset_root(kind) / f"{name}.json"
    try:
        return str(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AssetError(f"asset {kind}/{name}.json does not exist") from None


def load_asset(kind: str, name: str) -> dict[str, Any]:
    """A fresh parsed copy of ``<kind>/<name>.json``."""
    text = _load_cached(kind, name)
    try:
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    except json.JSONDecodeError as exc:
        raise AssetError(f"{kind}/{name}.json is not valid JSON: {exc}") from exc


def list_assets(kind: str) -> list[str]:
    return sorted(p.name[:-5] for p in _asset_root(kind).iterdir() if p.name.endswith(".json"))


# -- names ---------------------------------------------------------------------------------------

_INVALID_INDEX_CHARS = set('\\/*?"<>| ,#:')


def validate_index_name(name: str) -> str:
    """Reject names OpenSearch would reject, before anything is sent."""
    problems = []
    if not name:
        problems.append("it is empty")
    if name != name.lower():
        problems.append("it must be lowercase")
    if bad := sorted(set(name) & _INVALID_INDEX_CHARS):
        problems.append(f"it contains {''.join(bad)!r}")
    if name[:1] in ("-", "_", "+"):
        problems.append("it must not start with -, _ or +")
    if name in (".", ".."):
        problems.append("it must not be . or ..")
    if len(name.encode()) > 200:  # 255 is the server's limit; leave room for -vN and suffixes
        problems.append("it is longer than 200 bytes")
    if problems:
        raise InputError(f"index name {name!r} is not valid: " + "; ".join(problems))
    return name


@dataclass(frozen=True)
class IndexNames:
    """Every cluster object that belongs to one hybrid index called ``alias``."""

    alias: str

    def __post_init__(self) -> None:
        validate_index_name(self.alias)

    def component(self, part: str) -> str:
        return f"{self.alias}-{part}"

    @property
    def index_template(self) -> str:
        return self.alias

    def index(self, version: int) -> str:
        return f"{self.alias}-v{version}"

    @property
    def pattern(self) -> str:
        return f"{self.alias}-v*"

    def pipeline(self, fusion: Fusion) -> str:
        """The stored pipeline that runs ``fusion`` for this index: ``<alias>-<fusion name>``."""
        return f"{self.alias}-{fusion.name}"

    def default_pipeline(self, spec: IndexSpec) -> str:
        return f"{self.alias}-{spec.default_pipeline or spec.default_fusion}"

    @staticmethod
    def version_of(index: str) -> int:
        match = re.search(r"-v(\d+)$", index)
        if not match:
            raise InputError(f"{index!r} is not a versioned index name (<alias>-vN)")
        return int(match.group(1))


# -- index template ------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSpec:
    """Everything that shapes a hybrid index; rendered into component + index templates."""

    fingerprint: EmbeddingFingerprint
    # the one rule's default (adapter.index.language), chosen from documents where there are some
    analyzer: str = DEFAULT_ANALYZER
    space_type: str = "cosinesimil"
    knn_method: str = "lucene"  # the k-NN method's engine: lucene (HNSW in Lucene), faiss, nmslib
    m: int = 16
    ef_construction: int = 128
    shards: int = 1
    replicas: str = "0-1"  # auto_expand_replicas: no unassigned replica on a single node
    vector_field: str = "embedding"
    text_fields: tuple[str, ...] = ("title", "text")  # title first, body last (adapter.index.documents)
    title_boost: float = 1.0  # the BM25 leg's weight on title matches (SciFact train prefers 0.5)
    text_layout: str = "fields"  # one of TEXT_LAYOUTS
    # The fusion of the index's default search pipeline (index.search.default_pipeline): what a
    # hybrid query sent without a pipeline gets, from any client. "adaptive": the adapter's searcher
    # chooses the weights per query (adapter.fusion.choice.policy); other clients get the calibrated corpus weights.
    # the measured default (adapter.fusion.choice.defaults), as `hybrid init`'s
    default_fusion: str = field(default_factory=default_fusion_name)
    # What the cluster offers for analyzers rendered from it (polish, spanish_hunspell,
    # icu_folding: adapter.index.analysis); set by for_cluster(), None until the cluster is known.
    analysis: AnalysisSupport | None = None
    # Instead, a stored pipeline of the index's own that is not a standard fusion's (`<alias>-<name>`,
    # e.g. a tuned one from `hybrid eval --tune`): the spec's pipelines.extra.
    default_pipeline: str | None = None

    def __post_init__(self) -> None:
        if self.knn_method not in KNN_METHODS:
            raise ConfigurationError(
                f"unknown k-NN method {self.knn_method!r}; expected one of {', '.join(KNN_METHODS)}"
            )
        if self.space_type not in SPACE_TYPES:
            raise ConfigurationError(
                f"unknown space_type {self.space_type!r}; expected one of {', '.join(SPACE_TYPES)}"
            )
        if self.space_type != "cosinesimil" and not self.fingerprint.normalized:
            # The seeds' warning: dot product (and L2 ranking) equal cosine only for unit vectors.
            raise ConfigurationError(
                f"space_type {self.space_type!r} ranks like cosine only for L2-normalised vectors, and embedder "
                f"{self.fingerprint.model} does not normalise; use cosinesimil or a normalising embedder"
            )
        if not 0 < self.title_boost <= 100:
            raise ConfigurationError(f"title_boost must be in (0, 100], got {self.title_boost}")
        if self.text_layout not in TEXT_LAYOUTS:
            raise ConfigurationError(
                f"unknown text layout {self.text_layout!r}; expected one of {', '.join(TEXT_LAYOUTS)}"
            )
        if self.text_layout == "combined" and self.title_boost != 1:
            raise ConfigurationError(
                "title_boost applies to the fields layout; the combined layout scores title and text as one field"
            )
        if COMBINED_FIELD in self.text_fields:
            raise ConfigurationError(
                f"{COMBINED_FIELD!r} is the combined layout's field; name the text fields otherwise"
            )
        if self.fingerprint.dimension < 1:
            raise ConfigurationError(f"vector dimension must be positive, got {self.fingerprint.dimension}")
        object.__setattr__(self, "text_fields", self.layout.text_fields)  # validates the names
        try:
            fusion = None if self.default_fusion == ADAPTIVE else parse_fusion(self.default_fusion)
        except InputError as exc:
            raise ConfigurationError(f"default_fusion: {exc}, or {ADAPTIVE}") from exc
        if fusion is not None and fusion.name != self.default_fusion:
            raise ConfigurationError(
                f"default_fusion {self.default_fusion!r} is not a fusion name; did you mean {fusion.name!r}?"
            )

    @property
    def layout(self) -> DocumentLayout:
        return DocumentLayout(tuple(self.text_fields), self.vector_field)

    def for_cluster(self, caps: ClusterAnalysisFacts) -> IndexSpec:
        """This spec on a cluster with ``caps`` (:class:`~adapter.engines.capabilities.Capabilities`):
        analyzers that depend on the cluster render for what it has."""
        return replace(self, analysis=AnalysisSupport.of(caps))

    @property
    def query_fields(self) -> list[str]:
        """How the BM25 leg queries the text fields (multi_match field boosts, or the combined field)."""
        if self.text_layout == "combined":
            return [COMBINED_FIELD]
        title = self.layout.title_field
        return [f"{f}^{self.title_boost:g}" if f == title and self.title_boost != 1 else f for f in self.text_fields]

    @property
    def meta(self) -> dict[str, Any]:
        return {
            "adapter_schema": SCHEMA_VERSION,
            "embedding": self.fingerprint.to_meta(),
            "vector_field": self.vector_field,
            "text_fields": list(self.text_fields),
            "query_fields": self.query_fields,
            "text_layout": self.text_layout,
            "default_fusion": self.default_fusion,
        }


# The k-NN method was called `engine` (a word the adapter keeps for the search engine): the old
# keyword and attribute still work, with a FutureWarning, so scripts keep running.
keep_old_field_name(
    IndexSpec,
    "engine",
    "knn_method",
    keyword_warning="IndexSpec(engine=...) is deprecated: the k-NN method is knn_method=...",
    attribute_warning="IndexSpec.engine is deprecated: read knn_method",
)


def render_text_component(spec: IndexSpec, caps: ClusterAnalysisFacts | None = None) -> dict[str, Any]:
    """The text fields with the spec's analyzer (shared by every engine), as the cluster can run it:
    ``caps`` (:class:`~adapter.engines.capabilities.Capabilities`) when given, else what
    :meth:`IndexSpec.for_cluster` recorded (:mod:`adapter.index.analysis`)."""
    analysis = text_analysis(spec.analyzer, AnalysisSupport.of(caps) if caps is not None else spec.analysis)
    text = load_asset("mappings", "component-text")
    if analysis.own_block:
        block = {k: v for k, v in (("filter", analysis.filters), ("analyzer", analysis.analyzers)) if v}
        if block:
            text["template"]["settings"]["analysis"] = block
        else:
            del text["template"]["settings"]
    else:
        settings = text["template"]["settings"]["analysis"]
        if analysis.filters:
            settings.setdefault("filter", {}).update(analysis.filters)
        settings["analyzer"].update(analysis.analyzers)
    props = text["template"]["mappings"]["properties"]
    template_field = props.pop("text")
    props.pop("title", None)
    for name in spec.text_fields:
        props[name] = {**copy.deepcopy(template_field), "analyzer": analysis.analyzer}
        if spec.text_layout == "combined":
            props[name]["copy_to"] = [COMBINED_FIELD]
    if spec.text_layout == "combined":
        props[COMBINED_FIELD] = {**copy.deepcopy(template_field), "analyzer": analysis.analyzer}
    return text


def render_metadata_component() -> dict[str, Any]:
    return load_asset("mappings", "component-metadata")


def render_index_template(names: IndexNames, spec: IndexSpec) -> dict[str, Any]:
    body = load_asset("mappings", "index-template")
    body["index_patterns"] = [names.pattern]
    body["composed_of"] = [names.component(part) for part in COMPONENTS]
    settings = body["template"]["settings"]
    settings["index.number_of_shards"] = spec.shards
    settings["index.auto_expand_replicas"] = spec.replicas
    settings["index.search.default_pipeline"] = names.default_pipeline(spec)
    body["template"]["mappings"]["_meta"] = spec.meta
    return body


def merged_mapping(components: dict[str, dict[str, Any]], spec: IndexSpec) -> dict[str, Any]:
    """The mapping an index created from ``components`` ends up with (merged as the server does)."""
    merged: dict[str, Any] = {"properties": {}}
    for body in components.values():
        mappings = body["template"].get("mappings", {})
        for key, value in mappings.items():
            if key == "properties":
                merged["properties"].update(value)
            else:
                merged[key] = value
    merged["_meta"] = spec.meta
    return merged
