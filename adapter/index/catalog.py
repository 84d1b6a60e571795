"""Reading cluster state in one place: which index an alias points to, what it was built with,
and which search pipelines exist. :class:`IndexInfo` is what the searcher and the ingestor need;
they take it ready-made and do no requests of their own to learn it.

Each function takes the port (:class:`~adapter.engines.port.Cluster`); :func:`read_index_info`, public, also takes a
user's raw client (:func:`adapter.engines.cluster_for`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from adapter.engines import Cluster, ClusterLike, cluster_for
from adapter.errors import ConfigurationError, HybridError, IndexMismatchError
from adapter.index.documents import EMBEDDED_BY_FIELD, METADATA_FIELD, DocumentLayout
from adapter.models.fingerprint import EmbeddingFingerprint

DEFAULT_MAX_WINDOW = 10_000


def index_version(index: str) -> int:
    """The N of ``<alias>-vN`` (0 for a name without a version)."""
    match = re.search(r"-v(\d+)$", index)
    return int(match.group(1)) if match else 0


@dataclass(frozen=True)
class IndexInfo:
    """A hybrid index as the cluster holds it."""

    alias: str
    index: str  # the concrete index the alias points to (the newest version)
    fingerprint: EmbeddingFingerprint
    vector_field: str = "embedding"
    text_fields: tuple[str, ...] = ("title", "text")
    query_fields: tuple[str, ...] = ("title", "text")  # with boosts, e.g. title^0.5
    max_window: int = DEFAULT_MAX_WINDOW  # index.max_result_window
    default_pipeline: str | None = None  # index.search.default_pipeline
    schema: int = 1  # _meta.adapter_schema
    # _meta.default_fusion: "adaptive" (weights per query); on Elasticsearch the fusion a search without one uses
    default_fusion: str | None = None
    adaptive: Mapping[str, Any] | None = None  # _meta.adaptive: calibration and policy (adapter.fusion.choice.policy)
    # _meta.fast_path: the check that earns the fast path (adapter.search.fast_path)
    fast_path: Mapping[str, Any] | None = None
    relevance: Any = None  # _meta.relevance: each fusion's fitted relevance map (adapter.fusion.relevance), as stored
    shards: int = 1  # index.number_of_shards
    # The live metadata mapping: its declared keys and whether others are refused (adapter.index.metadata).
    metadata_fields: Mapping[str, Any] = field(default_factory=dict)  # metadata.properties
    metadata_strict: bool = False  # metadata is dynamic: strict (or false): the ingest declares its keys
    stamps_entries: bool = False  # the mapping has embedded_by: the ingest writes the fingerprint key on each entry
    # _meta keys someone edited into a shape this version cannot use: key -> what is wrong and the way back. The
    # searcher refuses such an index (naming them); init, calibrate and ingest still open it, to write them anew.
    problems: Mapping[str, str] = field(default_factory=dict)

    @property
    def layout(self) -> DocumentLayout:
        return DocumentLayout(self.text_fields, self.vector_field)

    @classmethod
    def from_index(cls, alias: str, index: str, body: Mapping[str, Any]) -> IndexInfo:
        """From the answer of ``GET <index>`` (mappings, settings and, if asked, their defaults)."""
        mappings = body.get("mappings") or {}
        props = mappings.get("properties") or {}
        meta, fp, vector_field = _checked_meta(index, mappings)
        problems = _meta_problems(index, meta, props)
        text_fields = _strings(meta.get("text_fields")) or ("title", "text")
        settings = _flat_index_settings(body.get("settings"))
        defaults = _flat_index_settings(body.get("defaults"))
        fingerprint = EmbeddingFingerprint.from_meta(fp)
        window = int(settings.get("max_result_window") or defaults.get("max_result_window") or DEFAULT_MAX_WINDOW)
        pipeline = settings.get("search.default_pipeline")
        schema = int(meta.get("adapter_schema", 1))
        shards = int(settings.get("number_of_shards") or 1)
        metadata_fields, metadata_strict = _metadata_mapping(props)
        return cls(
            alias=alias,
            index=index,
            fingerprint=fingerprint,
            vector_field=vector_field,
            text_fields=text_fields,
            query_fields=_strings(meta.get("query_fields")) or text_fields,
            max_window=window,
            default_pipeline=pipeline if pipeline and pipeline != "_none" else None,
            schema=schema,
            default_fusion=meta.get("default_fusion") if "default_fusion" not in problems else None,
            adaptive=meta.get("adaptive") if "adaptive" not in problems and meta.get("adaptive") else None,
            fast_path=meta.get("fast_path") or None,
            relevance=meta.get("relevance") or None,
            shards=shards,
            metadata_fields=metadata_fields,
            metadata_strict=metadata_strict,
            stamps_entries=EMBEDDED_BY_FIELD in props,
            problems=problems,
        )

    def check_meta(self, *, own_text_fields: bool = False) -> None:
        """Raise :class:`IndexMismatchError` naming every ``_meta`` key of :attr:`problems` (``own_text_fields``:
        the caller queries text fields of its own, so ``query_fields`` is not used)."""
        found = [p for key, p in self.problems.items() if not (own_text_fields and key == "query_fields")]
        if found:
            raise IndexMismatchError("; ".join(found))


_FIXES = {
    "adaptive": "run `hybrid calibrate` to write it anew",
    "query_fields": "run `hybrid init` with the index's spec to write the fields back, or query text fields of your "
    "own",
    "text_fields": "run `hybrid init` with the index's spec to write them back",
    "default_fusion": "run `hybrid init` with the index's spec to write it back",
}


def _a(value: Any) -> str:
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings as a tuple; anything else (a bare string included: not its characters) as ()."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()


def _checked_meta(index: str, mappings: Mapping[str, Any]) -> tuple[Mapping[str, Any], Any, str]:
    """The index's ``_meta``, its embedding fingerprint and its vector field, or why the index is not a hybrid one."""
    meta = mappings.get("_meta") or {}
    fp = meta.get("embedding")
    if not fp:
        raise ConfigurationError(
            f"index {index!r} has no _meta.embedding fingerprint; was it created by `hybrid init`?"
        )
    vector_field = meta.get("vector_field", "embedding")
    if vector_field not in (mappings.get("properties") or {}):
        raise IndexMismatchError(
            f"index {index!r} has no vector field {vector_field!r}; it cannot serve dense or hybrid search"
        )
    return meta, fp, vector_field


def _metadata_mapping(properties: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The live metadata mapping's declared keys, and whether it refuses others (dynamic strict or false)."""
    metadata = properties.get(METADATA_FIELD) or {}
    return dict(metadata.get("properties") or {}), str(metadata.get("dynamic", "true")).lower() in ("strict", "false")


def _meta_problems(index: str, meta: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, str]:
    """The ``_meta`` keys in a shape this version cannot use, each with what is wrong and the way back. A
    ``query_fields`` that names a field the mapping lacks would make BM25 match nothing: a problem too."""
    from adapter.engines import responses

    wrong: dict[str, str] = {}
    for key in ("text_fields", "query_fields"):
        value = meta.get(key)
        if value is not None and not (_strings(value) and value):
            wrong[key] = f"is {_a(value)}, not a list of field names"
    for key, kind, name in (("adaptive", Mapping, "an object"), ("default_fusion", str, "a fusion's name")):
        value = meta.get(key)
        if (value is not None or key == "adaptive" and key in meta) and not isinstance(value, kind):
            wrong[key] = f"is {_a(value) if value is not None else 'null'}, not {name}"
    if isinstance(meta.get("adaptive"), Mapping):
        problem = _adaptive_problem(meta["adaptive"])
        if problem:
            wrong["adaptive"] = problem
    if "query_fields" not in wrong:
        mapped = responses.mapped_fields({index: {"mappings": {"properties": properties}}})
        missing = [f for f in _strings(meta.get("query_fields")) if not fnmatch.filter(mapped, f.split("^")[0])]
        if missing:
            wrong["query_fields"] = (
                f"names {', '.join(map(repr, missing))}, which the mapping lacks: BM25 would match "
                "nothing and a hybrid search would be dense only"
            )
    return {key: f"index {index}'s _meta.{key} {what}; {_FIXES[key]}" for key, what in wrong.items()}


def _adaptive_problem(adaptive: Mapping[str, Any]) -> str | None:
    """What makes an object ``_meta.adaptive`` unreadable (keys it never has, a null or malformed policy or
    calibration), or None: read as the default policy, such an object used to be ignored without a word."""
    from adapter.fusion.choice.policy import stored_policy

    unknown = sorted(str(k) for k in adaptive if k not in ("policy", "calibration"))
    if unknown:
        return f"has {', '.join(map(repr, unknown))}, which it never holds (only 'policy' and 'calibration')"
    empty = [k for k in ("policy", "calibration") if k in adaptive and not isinstance(adaptive[k], Mapping)]
    if empty:
        return (
            f"holds {empty[0]!r} as {_a(adaptive[empty[0]]) if adaptive[empty[0]] is not None else 'null'}, "
            "not an object"
        )
    try:
        stored_policy(adaptive)
    except (HybridError, KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"cannot be read ({type(exc).__name__}: {exc})"
    return None


def _flat_index_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"index": {"search": {"default_pipeline": x}}}`` or flat keys -> ``{"search.default_pipeline": x}``."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else key, sub)
        else:
            out[prefix] = value

    walk("", settings or {})
    return {k[len("index.") :] if k.startswith("index.") else k: v for k, v in out.items()}


def alias_indices(cluster: Cluster, alias: str) -> list[str]:
    """Indices behind ``alias``, oldest version first (empty when the alias does not exist)."""
    if not cluster.alias_exists(alias):
        return []
    return sorted(cluster.aliased_indices(alias), key=index_version)


def orphaned_indices(cluster: Cluster, alias: str) -> list[str]:
    """Versioned indices of ``alias`` (``<alias>-vN``) that exist while the alias does not, oldest first."""
    found = cluster.indices_matching(f"{alias}-v*", action=f"looking for indices of {alias}")
    pattern = re.compile(rf"^{re.escape(alias)}-v\d+$")
    return sorted((name for name in found if pattern.match(name)), key=index_version)


def read_index_info(client: ClusterLike, alias: str) -> IndexInfo:
    """The :class:`IndexInfo` of the newest index behind ``alias``; a clear error if there is none.
    One request (``GET <alias>``: the server resolves the alias and answers each of its indices); a
    name with a wildcard or a comma, which the server would expand, is read the long way."""
    cluster = cluster_for(client)
    found: dict[str, dict[str, Any] | None] | None
    if _PATTERN.search(alias):
        indices = alias_indices(cluster, alias)
        found = (
            {index: None for index in indices} if indices else ({alias: None} if cluster.index_exists(alias) else None)
        )
    else:
        got = cluster.get_indices(alias, include_defaults=True, filter_path=_INFO_FILTER)
        found = None if got is None else {index: body for index, body in got.items()}
    if not found or alias in found:
        hint = "it is a plain index, not one made by `hybrid init`" if found else "create it with `hybrid init`"
        raise ConfigurationError(f"no hybrid index {alias!r} on the cluster ({hint})")
    newest = sorted(found, key=index_version)[-1]
    body = found[newest]
    return IndexInfo.from_index(alias, newest, body) if body is not None else version_index_info(cluster, alias, newest)


_PATTERN = re.compile(r"[*?,]")


def version_index_info(cluster: Cluster, alias: str, index: str) -> IndexInfo:
    """The :class:`IndexInfo` of one versioned index of ``alias``, whether or not the alias points to
    it (init re-attaching a deleted alias reads the index it will point to)."""
    body = cluster.get_index(index, include_defaults=True, filter_path=_INFO_FILTER)
    return IndexInfo.from_index(alias, index, body)


# Only what IndexInfo reads: the defaults of every setting are long.
_INFO_FILTER = ",".join(
    f"*.{part}"
    for part in (
        "mappings",
        "settings.index.max_result_window",
        "settings.index.search",
        "settings.index.number_of_shards",
        "defaults.index.max_result_window",
        "defaults.index.search",
    )
)


def read_pipeline(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """A search pipeline's body, or None when the cluster has no pipeline of that name (or its
    engine has no search pipelines)."""
    pipelines = cluster.pipelines
    return pipelines.get_search_pipeline(name) if pipelines is not None else None


DEFAULT_MAX_CLAUSE_COUNT = 1024  # indices.query.bool.max_clause_count when the cluster does not say


def index_meta(cluster: Cluster, index: str) -> dict[str, Any]:
    """The concrete index's mapping ``_meta`` (a copy: a put_mapping replaces it whole, so a writer
    sends back every key it does not change)."""
    return dict(cluster.get_mapping(index)[index]["mappings"].get("_meta") or {})


def mapped_fields(cluster: Cluster, index: str) -> set[str]:
    """Dotted paths of every field the index's mapping holds (dynamic metadata fields included)."""
    from adapter.engines import responses

    return responses.mapped_fields(cluster.get_mapping(index))


def max_clause_count(cluster: Cluster) -> int:
    """The cluster's limit on clauses in one query (``indices.query.bool.max_clause_count``)."""
    from adapter.engines import responses
    from adapter.errors import BackendError, ClusterUnavailableError

    name = "indices.query.bool.max_clause_count"
    try:
        settings = cluster.cluster_settings(
            filter_path=f"**.{name.rsplit('.', 1)[1]}", action="reading the cluster's clause limit"
        )
    except ClusterUnavailableError:
        raise
    except BackendError:  # a managed cluster that hides its settings (Serverless): assume the default
        return DEFAULT_MAX_CLAUSE_COUNT
    value = responses.cluster_setting(settings or {}, name)
    return int(value) if value is not None else DEFAULT_MAX_CLAUSE_COUNT
