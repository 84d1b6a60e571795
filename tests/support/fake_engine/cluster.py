"""The fake engine's port: every Cluster method, over state held in memory."""

from __future__ import annotations

import copy
import fnmatch
import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from adapter.engines.port import Body, BulkCounts, BulkOptions, Cluster, Json, record
from adapter.errors import BackendError, CapabilityError
from adapter.index.plan import canonical_settings

from .engine import FAKE, FakeEngine, fake_capabilities
from .search import BM25, project, ranked, sort_key, tokens

NO_PIPELINES = "the fake engine has no search pipelines"


@dataclass
class _Index:
    mappings: dict[str, Any]
    settings: dict[str, str]  # flat, as the server reports them: index.number_of_shards -> "1"
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    aliases: set[str] = field(default_factory=set)


def _missing(what: str) -> BackendError:
    return BackendError(
        f"{what}: the fake engine answered 404: no such index", status=404, reason="index_not_found_exception"
    )


class FakeCluster(Cluster):
    """A cluster in memory. ``FakeCluster()`` is empty; it is its own client."""

    def __init__(self, engine: FakeEngine = FAKE) -> None:
        self.engine = engine
        self.indices: dict[str, _Index] = {}
        self.components: dict[str, Json] = {}
        self.templates: dict[str, Json] = {}
        self.settings: dict[str, Any] = {}
        self._pits: dict[str, dict[str, dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    # -- the cluster ----------------------------------------------------------------------------------
    def describe(self) -> str:
        return "memory://fake"

    def probe(self, *, refresh: bool = False) -> Any:
        return fake_capabilities()

    def cluster_id(self, *, action: str | None = None) -> str:
        return "fake-cluster"

    def health(
        self, index: str | None = None, *, wait_for_status: str | None = None, timeout: str | None = None
    ) -> Json:
        return {"status": "green", "number_of_nodes": 1}

    def allocation_explain(self, index: str, *, shard: int = 0, primary: bool = True) -> Json | None:
        return None

    def cluster_settings(self, *, filter_path: str, action: str | None = None) -> Json:
        return {"persistent": dict(self.settings)}

    def put_cluster_settings(self, body: Body, *, action: str | None = None) -> None:
        self.settings.update(body.get("persistent") or {})

    # -- resolving names ------------------------------------------------------------------------------
    def _concrete(self, name: str | None) -> list[str]:
        names: list[str] = []
        for part in (name or "").split(","):
            names += [i for i, ix in self.indices.items() if fnmatch.fnmatch(i, part) or part in ix.aliases]
        return sorted(set(names))

    def _docs(self, index: str | None, body: Body, action: str) -> dict[str, dict[str, Any]]:
        if index is None:
            pit = self._pits.get(str((body.get("pit") or {}).get("id")))
            if pit is None:
                raise BackendError(f"{action}: the fake engine answered 404: no such point in time", status=404)
            return pit
        names = self._concrete(index)
        if not names:
            raise _missing(action)
        return {doc_id: doc for name in names for doc_id, doc in self.indices[name].docs.items()}

    # -- searching ------------------------------------------------------------------------------------
    def search(self, index: str | None, body: Body, *, pipeline: str | None = None, action: str | None = None) -> Json:
        if pipeline:
            raise CapabilityError(NO_PIPELINES)
        record("POST", f"/{index}/_search" if index else "/_search", {}, body)
        return self._search(index, body, action or f"searching {index}")

    def _search(self, index: str | None, body: Body, action: str) -> Json:
        docs = self._docs(index, body, action)
        hits = ranked(docs, body.get("query") or {"match_all": {}}, BM25(docs))
        sort = body.get("sort")
        if sort:
            hits.sort(key=lambda h: sort_key(docs[h[0]], sort))
            after = body.get("search_after")
            if after:
                hits = [h for h in hits if sort_key(docs[h[0]], sort) > list(after)]
        start, size = int(body.get("from", 0)), int(body.get("size", 10))
        page = []
        for doc_id, score in hits[start : start + size]:
            source = docs[doc_id]
            hit: dict[str, Any] = {
                "_index": self._home(doc_id, index),
                "_id": doc_id,
                "_score": None if sort else score,
            }
            kept = project(source, body.get("_source", True))
            if kept is not None:
                hit["_source"] = kept
            if sort:
                hit["sort"] = sort_key(source, sort)
            if body.get("docvalue_fields"):
                hit["fields"] = {f: [source.get(f)] for f in body["docvalue_fields"] if source.get(f) is not None}
            page.append(hit)
        answer: Json = {
            "took": 1,
            "_shards": {"total": 1, "successful": 1, "failed": 0},
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": page},
        }
        if index is None:
            answer["pit_id"] = body["pit"]["id"]
        return answer

    def _home(self, doc_id: str, index: str | None) -> str:
        for name in self._concrete(index) if index else self.indices:
            if doc_id in self.indices[name].docs:
                return name
        return str(index)

    def msearch(self, index: str, bodies: Sequence[Body], *, action: str | None = None) -> Json:
        lines: list[Any] = []
        for body in bodies:
            lines += [{"index": index}, body]
        record("POST", "/_msearch", {}, lines)
        return {"took": 1, "responses": [self._search(index, b, action or f"searching {index}") for b in bodies]}

    def mget(
        self, index: str, ids: Sequence[str], *, exclude: Sequence[str] = (), action: str | None = None
    ) -> list[Json]:
        record(
            "POST", f"/{index}/_mget", {"_source_excludes": ",".join(exclude)} if exclude else {}, {"ids": list(ids)}
        )
        docs = self._docs(index, {}, action or f"fetching documents from {index}")
        return [
            {
                "_id": i,
                "found": i in docs,
                **({"_source": project(docs[i], {"excludes": list(exclude)})} if i in docs else {}),
            }
            for i in ids
        ]

    def count(self, index: str, query: Body | None = None, *, action: str | None = None) -> int:
        docs = self._docs(index, {}, action or f"counting {index}")
        return len(ranked(docs, query or {"match_all": {}}))

    def termvectors(self, index: str, body: Body, *, action: str | None = None) -> Json:
        docs = self._docs(index, {}, action or f"reading term statistics of {index}")
        bm25 = BM25(docs)
        out: Json = {}
        for name in body["fields"]:
            terms, df, _ = bm25.field(name)
            words = tokens(body["doc"][name])
            out[name] = {
                "field_statistics": {
                    "doc_count": sum(1 for t in terms.values() if t),
                    "sum_ttf": sum(map(len, terms.values())),
                    "sum_doc_freq": sum(df.values()),
                },
                "terms": {
                    w: {
                        "term_freq": words.count(w),
                        "doc_freq": df.get(w, 0),
                        "ttf": sum(t.count(w) for t in terms.values()),
                    }
                    for w in set(words)
                },
            }
        return {"took": 1, "term_vectors": out}

    def open_point_in_time(self, index: str, *, keep_alive: str) -> str:
        pit = f"pit-{next(self._ids)}"
        self._pits[pit] = copy.deepcopy(self._docs(index, {}, f"opening a point in time on {index}"))
        return pit

    def close_point_in_time(self, pit: str) -> None:
        self._pits.pop(pit, None)

    # -- writing documents ----------------------------------------------------------------------------
    def bulk(
        self,
        actions: Iterable[Mapping[str, Any]],
        options: BulkOptions = BulkOptions(),
        *,
        counts: BulkCounts | None = None,
        action: str | None = None,
    ) -> Iterator[Json]:
        for act in actions:
            op, doc_id = act.get("_op_type", "index"), str(act["_id"])
            names = self._concrete(act["_index"])
            if len(names) != 1:
                yield {
                    op: {
                        "_index": act["_index"],
                        "_id": doc_id,
                        "status": 404,
                        "error": {"type": "index_not_found_exception", "reason": f"no such index [{act['_index']}]"},
                    }
                }
                continue
            index = self.indices[names[0]]
            if op == "delete":
                if index.docs.pop(doc_id, None) is None:
                    yield {op: {"_index": names[0], "_id": doc_id, "status": 404, "result": "not_found"}}
                continue
            problem = self._refused(index, act["_source"])
            if problem:
                yield {
                    op: {
                        "_index": names[0],
                        "_id": doc_id,
                        "status": 400,
                        "error": {"type": "document_parsing_exception", "reason": problem},
                    }
                }
                continue
            index.docs[doc_id] = copy.deepcopy(dict(act["_source"]))
            self._map_metadata(index, act["_source"])

    @staticmethod
    def _refused(index: _Index, source: Mapping[str, Any]) -> str | None:
        """What the mapping refuses in ``source``: a vector of another dimension."""
        for name, spec in (index.mappings.get("properties") or {}).items():
            value = source.get(name)
            if spec.get("type") == "fake_vector" and value is not None and len(value) != spec["dims"]:
                return f"the vector field [{name}] has {spec['dims']} dimensions, the document {len(value)}"
        return None

    @staticmethod
    def _map_metadata(index: _Index, source: Mapping[str, Any]) -> None:
        """Dynamic mapping of metadata keys, as a server maps them on first sight."""
        meta = source.get("metadata")
        if isinstance(meta, Mapping):
            props = index.mappings.setdefault("properties", {}).setdefault("metadata", {}).setdefault("properties", {})
            for key, value in meta.items():
                props.setdefault(key, {"type": "keyword" if isinstance(value, str) else "double"})

    def delete_by_query(self, index: str, query: Body, *, action: str | None = None) -> Json:
        deleted = 0
        for name in self._concrete(index):
            docs = self.indices[name].docs
            for doc_id, _ in ranked(docs, query):
                docs.pop(doc_id)
                deleted += 1
        return {"deleted": deleted, "failures": [], "version_conflicts": 0}

    def refresh(self, indices: Sequence[str], *, action: str | None = None) -> None:
        return None  # writes are visible at once

    # -- indices and aliases --------------------------------------------------------------------------
    def index_exists(self, name: str, *, action: str | None = None) -> bool:
        return bool(self._concrete(name))

    def alias_exists(self, name: str, *, action: str | None = None) -> bool:
        return any(name in ix.aliases for ix in self.indices.values())

    def aliased_indices(self, alias: str, *, action: str | None = None) -> list[str]:
        return [i for i, ix in self.indices.items() if alias in ix.aliases]

    def indices_matching(self, pattern: str, *, action: str | None = None) -> list[str]:
        return [i for i in self.indices if fnmatch.fnmatch(i, pattern)]

    def aliases_matching(self, pattern: str, *, action: str | None = None) -> set[str]:
        return {a for ix in self.indices.values() for a in ix.aliases if fnmatch.fnmatch(a, pattern)}

    def get_index(
        self, index: str, *, include_defaults: bool = False, filter_path: str | None = None, action: str | None = None
    ) -> Json:
        if index not in self.indices:
            raise _missing(action or f"reading {index}")
        ix = self.indices[index]
        return {
            "mappings": copy.deepcopy(ix.mappings),
            "settings": dict(ix.settings),
            "aliases": {a: {} for a in ix.aliases},
        }

    def create_index(
        self, index: str, body: Body, *, shard_wait: float | None = None, action: str | None = None
    ) -> None:
        if index in self.indices:
            raise BackendError(
                f"{action or f'creating {index}'}: the fake engine answered 400: {index} exists",
                status=400,
                reason="resource_already_exists_exception",
            )
        mappings: dict[str, Any] = {"properties": {}}
        settings: dict[str, Any] = {}
        for template in self._templates_for(index):
            for part in [self.components.get(c, {}) for c in template.get("composed_of", ())] + [template]:
                inner = part.get("template") or {}
                settings.update(canonical_settings(inner.get("settings") or {}))
                _merge_mappings(mappings, inner.get("mappings") or {})
        settings.update(canonical_settings(body.get("settings") or {}))
        _merge_mappings(mappings, body.get("mappings") or {})
        self.indices[index] = _Index(mappings, settings, aliases=set(body.get("aliases") or {}))

    def _templates_for(self, index: str) -> list[Json]:
        found = [
            t for t in self.templates.values() if any(fnmatch.fnmatch(index, p) for p in t.get("index_patterns", ()))
        ]
        return sorted(found, key=lambda t: t.get("priority", 0))[-1:]  # the highest priority applies

    def delete_indices(self, indices: Sequence[str], *, action: str | None = None) -> None:
        for name in indices:
            if self.indices.pop(name, None) is None:
                raise _missing(action or f"deleting {name}")

    def get_mapping(self, index: str, *, action: str | None = None) -> Json:
        return {name: {"mappings": copy.deepcopy(self.indices[name].mappings)} for name in self._concrete(index)}

    def put_mapping(self, index: str, body: Body, *, action: str | None = None) -> None:
        for name in self._concrete(index) or [index]:
            if name not in self.indices:
                raise _missing(action or f"updating the mapping of {index}")
            _merge_mappings(self.indices[name].mappings, body)

    def put_index_settings(self, index: str, body: Body, *, action: str | None = None) -> None:
        for name in self._concrete(index):
            self.indices[name].settings.update(canonical_settings(body))

    def put_alias(self, index: str, alias: str, *, action: str | None = None) -> None:
        self.indices[index].aliases.add(alias)

    def update_aliases(self, actions: Sequence[Body], *, action: str | None = None) -> None:
        for act in actions:
            ((kind, spec),) = act.items()
            target = self.indices[spec["index"]].aliases
            (target.add if kind == "add" else target.discard)(spec["alias"])

    # -- templates ------------------------------------------------------------------------------------
    def get_component_template(self, name: str) -> Json | None:
        return copy.deepcopy(self.components.get(name))

    def put_component_template(self, name: str, body: Body, *, action: str | None = None) -> None:
        self.components[name] = copy.deepcopy(dict(body))

    def get_index_template(self, name: str) -> Json | None:
        return copy.deepcopy(self.templates.get(name))

    def index_templates_matching(self, pattern: str) -> list[str]:
        return [n for n in self.templates if fnmatch.fnmatch(n, pattern)]

    def put_index_template(self, name: str, body: Body, *, action: str | None = None) -> None:
        self.templates[name] = copy.deepcopy(dict(body))


def _merge_mappings(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Properties merged field by field (objects deeply), everything else replaced, as a server merges mappings."""
    for key, value in extra.items():
        if key == "properties":
            props = into.setdefault("properties", {})
            for name, spec in value.items():
                if isinstance(spec, Mapping) and "properties" in spec and isinstance(props.get(name), dict):
                    _merge_mappings(props[name], spec)
                else:
                    props[name] = copy.deepcopy(dict(spec)) if isinstance(spec, Mapping) else spec
        else:
            into[key] = copy.deepcopy(value)
