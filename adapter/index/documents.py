"""The document contract: what one indexed entry (a document or a chunk) looks like. Pure.

An index has ordered text fields (``IndexSpec.text_fields``, recorded in ``_meta``). The last one
is the body: the text that is chunked and always present. With more than one field, the first is
the title: repeated on every chunk of a document and given to the embedder as context. Fields in
between are extra text fields, read from the source by the same name. Around them sit the ids
(``parent_id``, ``chunk_index``), ``metadata`` (declared by the ingest, :mod:`adapter.index.metadata`), the vector
field and ``embedded_by`` (which model computed it). Ingest, stale-chunk
cleanup and search all read the field names from here, so any text field names work end to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from adapter.errors import ConfigurationError
from adapter.index.floats import compact_floats

PARENT_FIELD = "parent_id"
CHUNK_FIELD = "chunk_index"
METADATA_FIELD = "metadata"
# The key of the fingerprint of the model that computed the entry's vector (EmbeddingFingerprint.key),
# written by the adapter on every entry: `hybrid check` finds entries written without it by one query.
EMBEDDED_BY_FIELD = "embedded_by"
RESERVED_FIELDS = (PARENT_FIELD, CHUNK_FIELD, METADATA_FIELD, EMBEDDED_BY_FIELD)
MAX_ID_BYTES = 512  # the server's limit on _id, counted in UTF-8 bytes (a longer one fails the whole bulk request)


def id_problem(doc_id: str) -> str | None:
    """Why the server would refuse ``doc_id`` as an ``_id``, or None."""
    size = len(doc_id.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        return f"id is {size} bytes in UTF-8; the server's limit is {MAX_ID_BYTES} bytes (shorten it, e.g. to a hash)"
    return None


@dataclass(frozen=True)
class DocumentLayout:
    """Where each part of an entry goes in the index."""

    text_fields: tuple[str, ...] = ("title", "text")
    vector_field: str = "embedding"

    def __post_init__(self) -> None:
        fields = tuple(self.text_fields)
        object.__setattr__(self, "text_fields", fields)
        if not fields:
            raise ConfigurationError("an index needs at least one text field")
        names = [*fields, self.vector_field]
        clash = sorted(
            {n for n in names if names.count(n) > 1 or n in RESERVED_FIELDS or not n or "." in n or n.startswith("_")}
        )
        if clash:
            raise ConfigurationError(
                f"field names {clash} cannot be used: text and vector fields must be distinct, without dots or a "
                f"leading underscore, and not one of {', '.join(RESERVED_FIELDS)}"
            )

    @property
    def body_field(self) -> str:
        return self.text_fields[-1]

    @property
    def title_field(self) -> str | None:
        return self.text_fields[0] if len(self.text_fields) > 1 else None

    @property
    def extra_fields(self) -> tuple[str, ...]:
        return self.text_fields[1:-1]


def embedding_text(title: str, text: str) -> str:
    """What the embedder reads for an entry: the title gives a chunk its context (BEIR-style title + text)."""
    return f"{title}\n{text}" if title and text else title or text


def build_document(
    layout: DocumentLayout,
    *,
    text: str,
    vector: Sequence[float],
    parent_id: str,
    chunk_index: int = 0,
    title: str = "",
    extra: Mapping[str, str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    embedded_by: str | None = None,
) -> dict[str, Any]:
    """The ``_source`` of one entry. Extra text fields the layout does not have are ignored;
    ``embedded_by``: the fingerprint key of the vector's model (indexes whose mapping has the field)."""
    doc: dict[str, Any] = {}
    if layout.title_field is not None:
        doc[layout.title_field] = title
    for name in layout.extra_fields:
        value = (extra or {}).get(name)
        if value:
            doc[name] = value
    doc[layout.body_field] = text
    doc[PARENT_FIELD] = parent_id
    doc[CHUNK_FIELD] = chunk_index
    doc[METADATA_FIELD] = dict(metadata or {})
    if embedded_by is not None:
        doc[EMBEDDED_BY_FIELD] = embedded_by
    doc[layout.vector_field] = compact_floats(vector)  # float32's shortest decimals: the values the index keeps
    return doc


def metadata_as_written(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """An entry's metadata as its writer gave it. Before issue 28 a row's ``metadata`` object was
    stored one level too deep (``metadata.metadata.<key>``); a ``metadata`` key inside can only come
    from there now (the readers take a row's ``metadata`` object as the metadata itself), so it is
    read back at the top level, as the writer meant it (filters on it need the entry ingested again)."""
    out = dict(stored or {})
    nested = out.pop(METADATA_FIELD, None)
    if isinstance(nested, Mapping):
        out = {**nested, **out}
    elif nested is not None:
        out[METADATA_FIELD] = nested
    return out


def hit_title(layout: DocumentLayout, source: Mapping[str, Any]) -> str:
    return str(source.get(layout.title_field) or "") if layout.title_field else ""


def hit_text(layout: DocumentLayout, source: Mapping[str, Any]) -> str:
    return str(source.get(layout.body_field) or "")
