"""The declarative index spec: one file (YAML or JSON) that describes a hybrid index. Pure.

Ops teams check the file into their repository; ``hybrid plan | apply | diff SPEC`` compare it with
the cluster and converge it, ``hybrid reindex SPEC`` migrates to it. The same options as
``hybrid init`` build one (``--write-spec FILE`` saves it). Format (every key but ``alias`` and
``embedder`` is optional; defaults are the ones ``hybrid init`` uses)::

    version: 1
    alias: docs
    embedder: minilm                 # or {spec: minilm, fingerprint: {...}}: pinned, no model needed
    index:
      analyzer: english
      text_fields: [title, text]     # title first, body last (adapter.index.documents)
      title_boost: 0.5
      text_layout: fields            # or combined: title and text copied into one BM25 field
      vector_field: embedding
      space_type: cosinesimil
      knn_method: lucene             # the k-NN method (lucene, faiss, nmslib; was `engine`, still read)
      hnsw: {m: 16, ef_construction: 128}
      shards: 1
      replicas: 0-1                  # index.auto_expand_replicas
    pipelines:
      weights: [0.5, 0.5]            # of the standard pipelines: every fusion the cluster runs
      extra:                         # more pipelines, stored as <alias>-<name>
        tuned: tuned-scifact.json    # a pipeline asset file (relative to the spec), or the body inline
      default: adaptive              # index.search.default_pipeline: a fusion name (adaptive: weights per
                                     # query), or an extra's name; default: the measured default, as init

Unknown keys are errors (a typo in an ops file must not be ignored). JSON is read by the standard
library; YAML by PyYAML (a core dependency: the format ops write by hand).

The embedder is named by its spec (``minilm``, ``multilingual-e5-small``, ``st:<model>``) and
resolved to its fingerprint when a command needs one, which loads the model package. A pinned
``fingerprint`` lets ``plan``/``diff``/``apply`` run in CI without any model installed; commands
that embed (``reindex``) check the loaded model against the pin.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from adapter.errors import ConfigurationError, InputError
from adapter.fusion import DEFAULT_FUSION, DEFAULT_WEIGHTS, ScoreNormalization, parse_fusion
from adapter.fusion.choice.defaults import default_fusion_name
from adapter.fusion.choice.values import ADAPTIVE
from adapter.index.assets import IndexNames, IndexSpec
from adapter.index.contracts import SPEC_SCHEMA_VERSION
from adapter.models.fingerprint import EmbeddingFingerprint

SPEC_VERSION = SPEC_SCHEMA_VERSION  # adapter/schemas/spec.schema.json (`hybrid schema spec`)
_TOP = ("version", "alias", "embedder", "index", "pipelines")
_INDEX = (
    "analyzer",
    "text_fields",
    "title_boost",
    "text_layout",
    "vector_field",
    "space_type",
    "knn_method",
    "hnsw",
    "shards",
    "replicas",
    "engine",
)  # engine: knn_method's old name, read with a FutureWarning
_HNSW = ("m", "ef_construction")
_PIPELINES = ("weights", "extra", "default")
_EMBEDDER = ("spec", "fingerprint")


@dataclass(frozen=True)
class Spec:
    """A hybrid index as the spec file describes it (see the module docstring)."""

    alias: str
    embedder: str  # how to load the model (adapter.models.embedders.load_embedder)
    fingerprint: EmbeddingFingerprint | None = None  # pinned; None: resolved from the model when needed
    # The index options default to IndexSpec's: one place holds them.
    analyzer: str = IndexSpec.analyzer
    text_fields: tuple[str, ...] = IndexSpec.text_fields
    title_boost: float = IndexSpec.title_boost
    text_layout: str = IndexSpec.text_layout
    vector_field: str = IndexSpec.vector_field
    space_type: str = IndexSpec.space_type
    knn_method: str = IndexSpec.knn_method
    m: int = IndexSpec.m
    ef_construction: int = IndexSpec.ef_construction
    shards: int = IndexSpec.shards
    replicas: str = IndexSpec.replicas
    weights: tuple[float, float] = DEFAULT_WEIGHTS
    # name -> pipeline body, stored as <alias>-<name>; a tuple of pairs so the spec stays hashable and frozen
    extra_pipelines: tuple[tuple[str, str], ...] = ()  # (name, body as canonical JSON)
    default: str = field(default_factory=default_fusion_name)  # a fusion name, "adaptive", or an extra pipeline's name
    origin: str = field(default="", compare=False)  # where it was read from, for messages

    def __post_init__(self) -> None:
        if self.default not in dict(self.extra_pipelines) and self.default != ADAPTIVE:
            try:
                fusion = parse_fusion(self.default)
            except InputError:
                fusion = None
            if fusion is None or fusion.name != self.default:
                hint = (
                    f"; did you mean {fusion.name!r}?"
                    if fusion
                    else f" (extra pipelines: {', '.join(dict(self.extra_pipelines)) or 'none'})"
                )
                raise InputError(
                    f"{self._where}pipelines.default {self.default!r} is neither an extra pipeline nor a fusion "
                    f"name{hint}"
                )
        try:
            IndexNames(self.alias)  # validates the name
            ScoreNormalization(weights=self.weights)  # validated as the server validates them
            self.index_spec(self.fingerprint or _PLACEHOLDER)  # the index options, now rather than at apply
        except (ConfigurationError, InputError) as exc:
            raise InputError(f"{self._where}{exc}") from exc
        if self.fingerprint is not None and self.fingerprint.spec != self.embedder:
            raise InputError(
                f"{self._where}embedder.fingerprint.spec is {self.fingerprint.spec!r} but embedder.spec is "
                f"{self.embedder!r}; pin the fingerprint of the model the spec names"
            )

    @property
    def _where(self) -> str:
        return f"{self.origin}: " if self.origin else ""

    @property
    def names(self) -> IndexNames:
        return IndexNames(self.alias)

    @property
    def pipelines(self) -> dict[str, dict[str, Any]]:
        """The extra pipelines, name -> a fresh body."""
        return {name: json.loads(body) for name, body in self.extra_pipelines}

    @property
    def default_is_extra(self) -> bool:
        return self.default in dict(self.extra_pipelines)

    def resolved(self, resolve: Callable[[str], EmbeddingFingerprint]) -> Spec:
        """This spec with its fingerprint: the pinned one, else ``resolve(embedder)`` (loads the model package)."""
        return self if self.fingerprint is not None else replace(self, fingerprint=resolve(self.embedder))

    def index_spec(self, fingerprint: EmbeddingFingerprint | None = None) -> IndexSpec:
        fp = fingerprint or self.fingerprint
        if fp is None:
            raise InputError(
                f"{self._where}the embedder {self.embedder!r} has no fingerprint yet; resolve the spec first"
            )
        return IndexSpec(
            fp,
            analyzer=self.analyzer,
            space_type=self.space_type,
            knn_method=self.knn_method,
            m=self.m,
            ef_construction=self.ef_construction,
            shards=self.shards,
            replicas=self.replicas,
            vector_field=self.vector_field,
            text_fields=tuple(self.text_fields),
            title_boost=self.title_boost,
            text_layout=self.text_layout,
            default_fusion=DEFAULT_FUSION.name if self.default_is_extra else self.default,
            default_pipeline=self.default if self.default_is_extra else None,
        )

    def to_document(self, *, pin: bool = True) -> dict[str, Any]:
        """The spec as a file holds it (``pin``: with the fingerprint, so CI needs no model)."""
        embedder: Any = self.embedder
        if pin and self.fingerprint is not None:
            embedder = {"spec": self.embedder, "fingerprint": self.fingerprint.to_meta()}
        doc: dict[str, Any] = {
            "version": SPEC_VERSION,
            "alias": self.alias,
            "embedder": embedder,
            "index": {
                "analyzer": self.analyzer,
                "text_fields": list(self.text_fields),
                "title_boost": self.title_boost,
                "text_layout": self.text_layout,
                "vector_field": self.vector_field,
                "space_type": self.space_type,
                "knn_method": self.knn_method,
                "hnsw": {"m": self.m, "ef_construction": self.ef_construction},
                "shards": self.shards,
                "replicas": self.replicas,
            },
            # str(): the adaptive default is a str enum, which yaml.safe_dump cannot represent
            "pipelines": {"weights": list(self.weights), "default": str(self.default)},
        }
        if self.extra_pipelines:
            doc["pipelines"]["extra"] = self.pipelines
        return doc


# Validates the index options of a spec whose fingerprint is not resolved yet (dimension and
# normalisation only matter with the real one, which index_spec() checks again).
_PLACEHOLDER = EmbeddingFingerprint("unresolved", "unresolved", "", 1, True)


def _check_keys(section: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(section, Mapping):
        raise InputError(f"{where} must be a mapping, got {type(section).__name__}")
    unknown = sorted(set(section) - set(allowed))
    if unknown:
        raise InputError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(allowed)}"
        )


def _pipeline_body(name: str, value: Any, base: Path | None, where: str) -> str:
    if isinstance(value, str):  # a file, relative to the spec
        path = Path(value) if base is None or Path(value).is_absolute() else base / value
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{where}.extra.{name}: cannot read pipeline asset {path}: {exc}") from exc
    if not isinstance(value, Mapping):
        raise InputError(f"{where}.extra.{name} must be a pipeline body (a mapping) or a JSON file name")
    return json.dumps(value, sort_keys=True)


def spec_from_document(doc: Any, *, origin: str = "", base: Path | None = None) -> Spec:
    """A :class:`Spec` from a parsed file; ``base`` is the folder relative pipeline files are read from."""
    where = origin or "spec"
    _check_keys(doc, _TOP, where)
    version = doc.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        raise InputError(
            f"{where}: spec version {version!r} is not supported (this adapter reads version {SPEC_VERSION})"
        )
    for key in ("alias", "embedder"):
        if key not in doc:
            raise InputError(f"{where}: {key!r} is required")
    embedder, fingerprint = _embedder(doc["embedder"], where)
    # Every section's keys are checked before its options are read: a typo is named first.
    index = doc.get("index") or {}
    _check_keys(index, _INDEX, f"{where}: index")
    hnsw = index.get("hnsw") or {}
    _check_keys(hnsw, _HNSW, f"{where}: index.hnsw")
    pipes = doc.get("pipelines") or {}
    _check_keys(pipes, _PIPELINES, f"{where}: pipelines")
    extra = pipes.get("extra") or {}
    if not isinstance(extra, Mapping):
        raise InputError(f"{where}: pipelines.extra must map names to pipeline bodies or files")
    options = {**_index_options(index, hnsw, where), **_pipeline_options(pipes, where)}
    bodies = tuple(
        sorted(
            (str(name), _pipeline_body(str(name), body, base, f"{where}: pipelines")) for name, body in extra.items()
        )
    )
    return Spec(
        alias=str(doc["alias"]),
        embedder=embedder,
        fingerprint=fingerprint,
        extra_pipelines=bodies,
        origin=origin,
        **options,
    )


def _embedder(value: Any, where: str) -> tuple[str, EmbeddingFingerprint | None]:
    """The spec's ``embedder``: a model spec, or ``{spec, fingerprint}`` with the fingerprint pinned."""
    fingerprint = None
    if isinstance(value, Mapping):
        _check_keys(value, _EMBEDDER, f"{where}: embedder")
        if "spec" not in value:
            raise InputError(f"{where}: embedder.spec is required (e.g. minilm)")
        if value.get("fingerprint") is not None:
            fingerprint = EmbeddingFingerprint.from_meta(value["fingerprint"])
        value = value["spec"]
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: embedder must be a model spec such as minilm, or {{spec: ..., fingerprint: ...}}")
    return value.strip(), fingerprint


def _index_options(index: Mapping[str, Any], hnsw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The :class:`Spec` fields the ``index`` section sets, each cast and checked."""
    options: dict[str, Any] = {}
    if "engine" in index:  # knn_method's old name: scripts and files that use it keep working
        if "knn_method" in index:
            raise InputError(f"{where}: index.engine is the old name of index.knn_method; give one of them")
        # stacklevel 3: the warning names the line that called spec_from_document
        warnings.warn(
            f"{where}: index.engine is deprecated: name the k-NN method index.knn_method", FutureWarning, stacklevel=3
        )
        options["knn_method"] = str(index["engine"])
    for key in ("analyzer", "text_layout", "vector_field", "space_type", "knn_method"):
        if key in index:
            options[key] = str(index[key])
    for key, cast in (("title_boost", float), ("shards", int)):
        if key in index:
            options[key] = _cast(index[key], cast, f"{where}: index.{key}")
    for key in _HNSW:
        if key in hnsw:
            options[key] = _cast(hnsw[key], int, f"{where}: index.hnsw.{key}")
    if "replicas" in index:
        options["replicas"] = str(index["replicas"])
    if "text_fields" in index:
        if not isinstance(index["text_fields"], list) or not all(isinstance(f, str) for f in index["text_fields"]):
            raise InputError(f"{where}: index.text_fields must be a list of field names")
        options["text_fields"] = tuple(index["text_fields"])
    return options


def _pipeline_options(pipes: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The :class:`Spec` fields the ``pipelines`` section sets (its ``extra`` bodies are read apart)."""
    options: dict[str, Any] = {}
    if "weights" in pipes:
        weights = pipes["weights"]
        if not isinstance(weights, list) or len(weights) != 2:
            raise InputError(f"{where}: pipelines.weights must be two numbers [bm25, dense]")
        options["weights"] = tuple(_cast(w, float, f"{where}: pipelines.weights") for w in weights)
    if "default" in pipes:
        options["default"] = str(pipes["default"])
    return options


def _cast(value: Any, kind: type[int] | type[float], where: str) -> Any:
    if isinstance(value, bool):
        raise InputError(f"{where} must be a number, got {value!r}")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise InputError(f"{where} must be {'an integer' if kind is int else 'a number'}, got {value!r}") from None


def parse_spec_text(
    text: str, *, origin: str = "spec", yaml_format: bool | None = None, base: Path | None = None
) -> Spec:
    """A spec from file contents: JSON when it parses as JSON (or ``yaml_format`` is False), else YAML."""
    doc: Any
    if yaml_format is not True:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            if yaml_format is False:
                raise InputError(f"{origin} is not valid JSON: {exc}") from exc
            doc = _load_yaml(text, origin)
    else:
        doc = _load_yaml(text, origin)
    return spec_from_document(doc, origin=origin, base=base)


def _load_yaml(text: str, origin: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{origin} is not valid YAML: {exc}") from exc


def load_spec(path: str | Path) -> Spec:
    """Read a spec file (``.json``, ``.yaml``/``.yml``; other names are tried as JSON, then YAML)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the spec {p}: {exc.strerror or exc}") from exc
    suffix = p.suffix.lower()
    kind = True if suffix in (".yaml", ".yml") else False if suffix == ".json" else None
    return parse_spec_text(text, origin=str(p), yaml_format=kind, base=p.parent)


def dump_spec(spec: Spec, path: str | Path, *, pin: bool = True) -> Path:
    """Write ``spec`` as YAML (``.yaml``/``.yml``) or JSON (anything else)."""
    p = Path(path)
    doc = spec.to_document(pin=pin)
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        text = "# hybrid index spec: `hybrid plan|apply|diff` this file (docs/OPERATIONS.md)\n"
        text += yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False)
    else:
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    p.write_text(text, encoding="utf-8")
    return p
