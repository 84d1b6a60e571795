"""Reading documents to ingest: JSONL, CSV and folders of .txt/.md files, with a field mapping.

Readers yield :class:`SourceDoc` for good rows and :class:`RowError` for bad ones (with line
numbers), so one bad row never hides the good ones. Chunking with overlap is a pure function.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TextIO

from adapter.errors import InputError

ID_CANDIDATES = ("id", "_id", "doc_id")

# The size policy (docs/RELIABILITY.md): a document whose text (title, body and extra text fields)
# is over this many characters is refused before it is embedded, with what to do (chunk it with
# --chunk-size, or raise --max-chars). One huge entry would otherwise hold the model for minutes
# (a 105 MB text took 12 GB of memory) and come back in every search it matches.
DEFAULT_MAX_CHARS = 100_000


def row_limit(max_chars: int | None) -> int | None:
    """Characters a raw input row may have before the reader refuses it unread (its JSON, escapes and
    metadata around a text of ``max_chars``); None: no limit."""
    return None if max_chars is None else max(16 * max_chars, 4 << 20)


def oversize(chars: int, max_chars: int, what: str = "its text") -> str:
    return (
        f"{what} is {chars:,} characters, over the limit of {max_chars:,}: split it into chunks (--chunk-size N "
        "words), or raise the limit (--max-chars)"
    )


def _too_long_row(size: int, limit: int) -> str:
    return (
        f"the row is {size / 2**20:.1f} MiB, over the {limit:,} characters a row may have under the size limit; it "
        "was skipped unread. Split the document, or raise the limit (--max-chars)"
    )


@dataclass(frozen=True)
class SourceDoc:
    """One input document. ``text`` goes to the index's body field, ``title`` to its title field,
    ``extra`` to further text fields of the same names (see :mod:`adapter.index.documents`)."""

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    # Lineage: an entry a framework (or an earlier export) already split off its document. ``parent_id``
    # set: the row is one chunk, written as it is (never split again) under its own id.
    parent_id: str | None = None
    chunk_index: int | None = None
    # A vector the row carries, with the fingerprint key of the model that computed it (``embedded_by``):
    # used when that is the index's model, refused otherwise (never replaced silently).
    vector: tuple[float, ...] | None = None
    embedded_by: str | None = None


@dataclass(frozen=True)
class RowError:
    line: int | None
    reason: str
    id: str | None = None
    empty: bool = False  # the row is well-formed but has no text (some test collections have such documents)


@dataclass(frozen=True)
class FieldMap:
    """Which input fields hold the id, title, text and metadata.

    ``id=None`` takes the first of id/_id/doc_id present. ``metadata=None`` keeps every other
    field as metadata; a tuple keeps just those fields. A field named ``metadata`` holding an
    object is the metadata itself (the index contract's shape and BEIR's): its keys are read at
    the top level, never as ``metadata.metadata.*``. The contract's own fields (``parent_id``,
    ``chunk_index``, ``embedded_by`` and the ``vector`` field) are read as what they are, never as
    metadata, so a document read back in the contract's shape ingests as it was.
    """

    id: str | None = None
    title: str | None = "title"
    text: str = "text"
    metadata: tuple[str, ...] | None = None
    vector: str = "embedding"

    def check(self, available: Sequence[str], where: str) -> FieldMap:
        """Resolve ``id`` and reject fields the input does not have (a clear error, not silence)."""
        keys = list(available)
        id_field = self.id
        if id_field is None:
            id_field = next((c for c in ID_CANDIDATES if c in keys), None)
            if id_field is None:
                raise InputError(
                    f"{where}: no id field (looked for {', '.join(ID_CANDIDATES)}); available: {', '.join(keys)}"
                )
        wanted = {"id": id_field, "text": self.text}
        if self.title and self.title != "title":
            wanted["title"] = self.title
        for name in self.metadata or ():
            wanted[f"metadata {name!r}"] = name
        for role, name in wanted.items():
            if name not in keys:
                raise InputError(
                    f"{where}: the field mapping names {name!r} for {role}, but the input has only: {', '.join(keys)}"
                )
        return FieldMap(id=id_field, title=self.title, text=self.text, metadata=self.metadata, vector=self.vector)

    def row(self, record: Mapping[str, Any], line: int) -> SourceDoc | RowError:
        broken = _not_unicode(record)
        if broken:
            return RowError(line, broken)
        doc_id = self._doc_id(record, line)
        if isinstance(doc_id, RowError):
            return doc_id
        texts = self._texts(record, line, doc_id)
        if isinstance(texts, RowError):
            return texts
        title, text = texts
        metadata = self._metadata(record)
        if isinstance(metadata, str):
            return RowError(line, metadata, doc_id)
        lineage = _lineage(record, self.vector)
        if isinstance(lineage, str):
            return RowError(line, lineage, doc_id)
        return SourceDoc(doc_id, text, str(title or ""), metadata, line, **lineage)

    def _doc_id(self, record: Mapping[str, Any], line: int) -> str | RowError:
        """The row's id (text or a whole number, stripped), or why it has none."""
        raw_id = record.get(self.id)  # type: ignore[arg-type]
        if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
            return RowError(line, f"id field {self.id!r} holds {_kind(raw_id)}; an id is text or a whole number")
        if raw_id is None or not visible(str(raw_id)):
            return RowError(line, f"no value in id field {self.id!r}")
        return str(raw_id).strip()

    def _texts(self, record: Mapping[str, Any], line: int, doc_id: str) -> tuple[str, str] | RowError:
        """The row's title and text (each "" where nothing visible), or why the row is not a document."""
        text = record.get(self.text)
        if text is not None and not isinstance(text, str):
            return RowError(line, f"text field {self.text!r} holds {_kind(text)}, not text", doc_id)
        title = record.get(self.title) if self.title else ""
        if title is not None and not isinstance(title, str):
            return RowError(line, f"title field {self.title!r} holds {_kind(title)}, not text", doc_id)
        title = title if title and visible(title) else ""
        if not title:  # a row with a title and no body is a document: its title is what it has (LISA, catalogues)
            if not text or not text.strip():
                return RowError(line, f"no text in field {self.text!r}", doc_id, empty=True)
            if not visible(text):
                return RowError(
                    line,
                    f"no visible text in field {self.text!r} (only spaces, zero-width or control characters)",
                    doc_id,
                    empty=True,
                )
        text = text if text and visible(text) else ""
        return title, text

    def _metadata(self, record: Mapping[str, Any]) -> dict[str, Any] | str:
        """The row's metadata as written (a ``metadata`` object's keys at the top level), or why not."""
        if self.metadata is None:
            skip = {self.id, self.text, self.title, self.vector, *CONTRACT_FIELDS}
            names = [k for k in record if k not in skip]
        else:
            names = list(self.metadata)
        out = {k: record[k] for k in names if k != METADATA_KEY and record.get(k) not in (None, "")}
        if METADATA_KEY not in names or record.get(METADATA_KEY) in (None, ""):
            return out
        inner = record[METADATA_KEY]
        if not isinstance(inner, Mapping):
            return f"field {METADATA_KEY!r} holds {_kind(inner)}; metadata is an object of keys and values"
        for key, value in inner.items():
            if key in out and out[key] != value:
                return (
                    f"metadata key {key!r} is given twice with different values "
                    f"(at the top level and under {METADATA_KEY!r})"
                )
            out[str(key)] = value
        return out


METADATA_KEY = "metadata"
# The index contract's fields a row may carry back (adapter.index.documents): lineage and the vector's model.
CONTRACT_FIELDS = ("parent_id", "chunk_index", "embedded_by")


def _lineage(record: Mapping[str, Any], vector_field: str) -> dict[str, Any] | str:
    """``parent_id``, ``chunk_index``, the carried vector and its ``embedded_by`` (SourceDoc's
    keywords), or why they cannot be read."""
    out: dict[str, Any] = {}
    parent = record.get("parent_id")
    if parent not in (None, ""):
        if isinstance(parent, bool) or not isinstance(parent, (str, int)) or not visible(str(parent)):
            return f"parent_id holds {_kind(parent)}; it is the id of the document the row is a chunk of"
        out["parent_id"] = str(parent).strip()
    index = record.get("chunk_index")
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            return f"chunk_index must be a whole number >= 0, got {index!r}"
        out["chunk_index"] = index
    vector = record.get(vector_field)
    if vector is not None:
        if (
            not isinstance(vector, (list, tuple))
            or not vector
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector)
        ):
            return f"field {vector_field!r} holds {_kind(vector)}; a carried vector is a list of numbers"
        out["vector"] = tuple(float(x) for x in vector)
    stamp = record.get("embedded_by")
    if stamp not in (None, ""):
        if not isinstance(stamp, str):
            return f"embedded_by holds {_kind(stamp)}; it is the fingerprint key of the vector's model"
        out["embedded_by"] = stamp
    return out


# Characters that show nothing: controls (NUL...), format characters (zero-width space, joiners,
# word joiner, BOM, soft hyphen), unassigned and surrogate code points, and every kind of space.
_INVISIBLE = frozenset({"Cc", "Cf", "Cn", "Cs", "Zs", "Zl", "Zp"})


def visible(text: str) -> bool:
    """Whether ``text`` has at least one character that shows (text of only NBSP + ZWSP is empty)."""
    import unicodedata

    return any(not ch.isspace() and unicodedata.category(ch) not in _INVISIBLE for ch in text)


def _kind(value: Any) -> str:
    """A JSON value's type in words, for messages that must not print a Python repr."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


_SURROGATE = re.compile("[\ud800-\udfff]")
_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape turns an undecodable byte into


def _not_unicode(record: Mapping[str, Any]) -> str | None:
    """Why a record's text cannot be sent (a lone surrogate, from a JSON escape), or None."""
    for key, value in record.items():
        for text in (key, value):
            if isinstance(text, str) and _SURROGATE.search(text):
                return (
                    f"field {key!r} is not valid Unicode (a lone surrogate such as \\ud800); "
                    "fix the escape in the input"
                )
    return None


def _undecoded(text: str) -> str | None:
    """Why a line read with ``surrogateescape`` is not UTF-8 (its first bad byte and column), or None."""
    bad = _UNDECODED.search(text)
    if bad is None:
        return None
    byte = ord(bad.group()) - 0xDC00
    return f"not UTF-8: byte 0x{byte:02x} at column {bad.start() + 1}; re-encode the file as UTF-8"


def _json_error(exc: json.JSONDecodeError) -> str:
    # Some messages end in "at" ("Unterminated string starting at"): the column completes them.
    joiner = " " if exc.msg.endswith(" at") else " at "
    return f"invalid JSON: {exc.msg}{joiner}column {exc.colno}"


def _dedupe(rows: Iterable[SourceDoc | RowError]) -> Iterator[SourceDoc | RowError]:
    seen: dict[str, int | None] = {}
    for row in rows:
        if isinstance(row, SourceDoc):
            if row.id in seen:
                yield RowError(row.line, f"duplicate id {row.id!r} (first on line {seen[row.id]})", row.id)
                continue
            seen[row.id] = row.line
        yield row


def _lines(fh: TextIO, limit: int | None) -> Iterator[tuple[str, int | None]]:
    """``(line, None)`` per line, or ``("", bytes)`` for a line over ``limit`` characters, which is
    read through in pieces and dropped (memory: one piece, never the line)."""
    if limit is None:
        for line in fh:
            yield line, None
        return
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith("\n"):
            yield line, None
            continue
        size = len(line.encode("utf-8", "surrogateescape"))
        while not line.endswith("\n"):
            line = fh.readline(1 << 20)
            if not line:
                break
            size += len(line.encode("utf-8", "surrogateescape"))
        yield "", size


def read_jsonl(
    path: Path, fields: FieldMap, *, max_chars: int | None = DEFAULT_MAX_CHARS
) -> Iterator[SourceDoc | RowError]:
    limit = row_limit(max_chars)

    def rows() -> Iterator[tuple[int, object] | RowError]:
        # Decoded line by line: one bad byte costs its own line, not the file.
        with open(path, encoding="utf-8-sig", errors="surrogateescape") as fh:
            for line_no, (line, skipped) in enumerate(_lines(fh, limit), start=1):
                if skipped is not None:
                    yield RowError(line_no, _too_long_row(skipped, limit or 0))
                    continue
                if not line.strip():
                    continue
                bad_bytes = _undecoded(line)
                if bad_bytes:
                    yield RowError(line_no, bad_bytes)
                    continue
                try:
                    yield line_no, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield RowError(line_no, _json_error(exc))

    return _dedupe(_objects(path, fields, rows()))


MAPPING_ROWS = 100  # JSON rows read to check the field map against before any is ingested


def _objects(
    path: Path, fields: FieldMap, parsed: Iterator[tuple[int, object] | RowError]
) -> Iterator[SourceDoc | RowError]:
    """The rows of parsed JSON values (with the line each starts on): objects only. The field map
    is checked against the keys of the first rows together (up to :data:`MAPPING_ROWS`, fewer once
    every field it names was seen), not the first row alone: a title-only row on line 1 is a
    document, as it is on line 2, and a field no row has is still refused before any is ingested."""
    resolved: FieldMap | None = None
    held: list[tuple[int, dict[str, Any]]] = []
    keys: dict[str, None] = {}
    for item in parsed:
        if isinstance(item, RowError):
            yield item
            continue
        line_no, record = item
        if not isinstance(record, dict):
            yield RowError(line_no, f"expected a JSON object, got {type(record).__name__}")
            continue
        if resolved is not None:
            yield resolved.row(record, line_no)
            continue
        held.append((line_no, record))
        keys.update(dict.fromkeys(record))
        if len(held) >= MAPPING_ROWS or _covers(fields, keys):
            resolved = fields.check(list(keys), _rows_where(path, held))
            yield from (resolved.row(r, n) for n, r in held)
    if resolved is None and held:
        resolved = fields.check(list(keys), _rows_where(path, held))
        yield from (resolved.row(r, n) for n, r in held)


def _covers(fields: FieldMap, keys: Mapping[str, None]) -> bool:
    """Whether ``keys`` hold every field the map names (and an id, when the map leaves it to be found)."""
    named = [fields.id] if fields.id else []
    if not named and not any(c in keys for c in ID_CANDIDATES):
        return False
    named += [
        fields.text,
        *([fields.title] if fields.title and fields.title != "title" else []),
        *(fields.metadata or ()),
    ]
    return all(n in keys for n in named)


def _rows_where(path: Path, held: Sequence[tuple[int, Any]]) -> str:
    first, last = held[0][0], held[-1][0]
    return f"{path} line {first}" if first == last else f"{path} lines {first}-{last}"


_ARRAY_READ = 1 << 20  # characters read at a time from a JSON array file
_ARRAY_MAX_ELEMENT = 64 << 20  # an element that does not parse within this many characters is refused


def _starts_with_array(path: Path) -> bool:
    with open(path, encoding="utf-8-sig", errors="surrogateescape") as fh:
        head = fh.read(4096).lstrip()
    return head.startswith("[")


def read_json_array(
    path: Path, fields: FieldMap, *, max_chars: int | None = DEFAULT_MAX_CHARS
) -> Iterator[SourceDoc | RowError]:
    """A ``.json`` file holding one array of objects (pretty-printed or not), read an element at a time
    (memory: the largest element, not the file). Each row's line is the line its object starts on."""
    largest = row_limit(max_chars) or _ARRAY_MAX_ELEMENT

    def rows() -> Iterator[tuple[int, object] | RowError]:
        decoder = json.JSONDecoder()
        with open(path, encoding="utf-8-sig", errors="surrogateescape") as fh:
            buf, pos, line, eof = fh.read(_ARRAY_READ), 0, 1, False
            base = 0  # the column (0-based) buf[0] sits at on its line: the buffer is cut mid-line
            pos = buf.index("[") + 1
            line += buf.count("\n", 0, pos)
            while True:
                while True:  # skip whitespace and one comma; refill the buffer as needed
                    while pos < len(buf) and buf[pos] in " \t\r\n,":
                        line += buf[pos] == "\n"
                        pos += 1
                    if pos < len(buf) or eof:
                        break
                    base = _column_at(buf, len(buf), base)
                    buf, pos = fh.read(_ARRAY_READ), 0
                    eof = not buf
                if pos >= len(buf) or buf[pos] == "]":
                    return
                while True:
                    try:
                        record, end = decoder.raw_decode(buf, pos)
                        break
                    except json.JSONDecodeError as exc:
                        more = "" if eof else fh.read(_ARRAY_READ)
                        if not more or len(buf) - pos > largest:
                            where = line + buf.count("\n", pos, exc.pos)
                            column = _column_at(buf, exc.pos, base) + 1
                            yield RowError(
                                where,
                                f"invalid JSON: {exc.msg} at column {column}; the rest of the file was not "
                                "read (the array is broken there)",
                            )
                            return
                        base = _column_at(buf, pos, base)
                        buf, pos = buf[pos:] + more, 0
                bad_bytes = _undecoded(buf[pos:end])
                start, line = line, line + buf.count("\n", pos, end)
                base = _column_at(buf, end, base)
                buf, pos = buf[end:], 0
                yield RowError(start, bad_bytes) if bad_bytes else (start, record)

    return _dedupe(_objects(path, fields, rows()))


def _column_at(buf: str, index: int, base: int) -> int:
    """The 0-based column of ``buf[index]`` on its line, where ``buf[0]`` sits at column ``base``."""
    newline = buf.rfind("\n", 0, index)
    return index - newline - 1 if newline >= 0 else base + index


def read_csv(
    path: Path, fields: FieldMap, *, max_chars: int | None = DEFAULT_MAX_CHARS
) -> Iterator[SourceDoc | RowError]:
    limit = row_limit(max_chars)
    # The csv module refuses cells over its own limit (128 KiB by default) with an error that ended the
    # whole file; it is process-wide, so it is only ever raised.
    csv.field_size_limit(max(csv.field_size_limit(), limit or sys.maxsize))

    def rows() -> Iterator[SourceDoc | RowError]:
        with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames:
                raise InputError(f"{path}: no header row")
            header_bytes = _undecoded(",".join(reader.fieldnames))
            if header_bytes:
                raise InputError(f"{path}: the header row is {header_bytes}")
            resolved = fields.check(reader.fieldnames, str(path))
            while True:
                try:
                    record = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:  # a cell over the limit: that row alone
                    yield RowError(
                        reader.line_num, f"{exc}: a cell over {limit or 0:,} characters (the size limit, --max-chars)"
                    )
                    continue
                text = record.get(resolved.text)
                if limit is not None and isinstance(text, str) and len(text) > limit:
                    yield RowError(reader.line_num, _too_long_row(len(text.encode("utf-8", "surrogateescape")), limit))
                    continue
                if None in record:  # more cells than header names
                    yield RowError(reader.line_num, f"{len(record[None])} more cells than the header has columns")
                    continue
                bad_bytes = next(
                    (b for b in map(_undecoded, (v for v in record.values() if isinstance(v, str))) if b), None
                )
                if bad_bytes:
                    yield RowError(reader.line_num, bad_bytes)
                    continue
                yield resolved.row(record, reader.line_num)

    return _dedupe(rows())


_HEADING = re.compile(r"^\s*#\s+(.+?)\s*$", re.MULTILINE)


def read_folder(path: Path, *, max_chars: int | None = DEFAULT_MAX_CHARS) -> Iterator[SourceDoc | RowError]:
    """Every .txt/.md file below ``path``; id = relative path, title = first Markdown heading or file stem."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
    if not files:
        raise InputError(f"{path} contains no .txt or .md files")
    limit = row_limit(max_chars)
    for file in files:
        rel = file.relative_to(path).as_posix()
        size = file.stat().st_size
        if limit is not None and size > limit:
            yield RowError(None, f"{rel}: {_too_long_row(size, limit)}", rel)
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            yield RowError(None, f"{rel}: not UTF-8 text ({exc.reason})", rel)
            continue
        if not text.strip():
            yield RowError(None, f"{rel}: the file is empty", rel)
            continue
        heading = _HEADING.search(text) if file.suffix.lower() == ".md" else None
        title = heading.group(1) if heading else file.stem
        yield SourceDoc(rel, text, title, {"path": rel, "format": file.suffix.lower().lstrip(".")})


def read_source(
    path: str | Path,
    fields: FieldMap | None = None,
    *,
    format: str | None = None,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> Iterator[SourceDoc | RowError]:
    """Pick the reader from ``format`` or the path (folder, .jsonl, .json (JSON Lines or one array), .csv).

    ``max_chars``: rows too big to hold a text under this limit are refused unread (:func:`row_limit`);
    the text itself is checked by the :class:`~adapter.ingest.ingestor.Ingestor`, before it is embedded."""
    path = Path(path)
    fields = fields or FieldMap()
    if not path.exists():
        raise InputError(f"{path} does not exist")
    kind = format or ("folder" if path.is_dir() else path.suffix.lower().lstrip("."))
    if kind == "folder":
        return read_folder(path, max_chars=max_chars)
    if kind == "json" and _starts_with_array(path):
        return read_json_array(path, fields, max_chars=max_chars)
    if kind in ("jsonl", "ndjson", "json"):
        return read_jsonl(path, fields, max_chars=max_chars)
    if kind == "csv":
        return read_csv(path, fields, max_chars=max_chars)
    raise InputError(f"cannot tell the format of {path}; use .jsonl, .csv or a folder (or pass format=)")


def count_rows(path: str | Path) -> int | None:
    """Rows in a file or files in a folder, for a progress bar (None when unknown)."""
    path = Path(path)
    if path.is_dir():
        return sum(1 for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
    if path.suffix.lower() == ".json" and _starts_with_array(path):
        return None  # elements, not lines: unknown until read
    with open(path, "rb") as fh:
        lines = sum(1 for line in fh if line.strip())
    return max(lines - 1, 0) if path.suffix.lower() == ".csv" else lines


def input_fingerprint(path: str | Path) -> InputFingerprint:
    """The input's name and a BLAKE2b digest of its bytes (a folder: of each .txt/.md file's relative path and
    bytes, in order), which a partitioned round records so that its runs all read one input."""
    import hashlib

    path = Path(path)
    digest = hashlib.blake2b(digest_size=16)
    files = (
        sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
        if path.is_dir()
        else [path]
    )
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode("utf-8", "surrogateescape") + b"\0")
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return InputFingerprint(path.name or str(path), digest.hexdigest())


@dataclass(frozen=True)
class InputFingerprint:
    """Which input a run read: its name (for people) and the digest of its contents (what is compared)."""

    name: str
    digest: str

    @property
    def label(self) -> str:
        return f"{self.name} (blake2b {self.digest[:12]})"


# -- chunking ------------------------------------------------------------------------------------

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunking:
    """Split text into windows of ``size`` words overlapping by ``overlap`` words."""

    size: int = 200
    overlap: int = 40

    def __post_init__(self) -> None:
        if self.size < 1:
            raise InputError(f"chunk size must be at least 1 word, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise InputError(f"chunk overlap must be >= 0 and smaller than the size ({self.size}), got {self.overlap}")

    def split(self, text: str) -> list[str]:
        """Chunks as slices of the original text (formatting inside a chunk is kept)."""
        spans = [m.span() for m in _WORD.finditer(text)]
        if not spans:
            return []
        if len(spans) <= self.size:
            return [text[spans[0][0] : spans[-1][1]]]
        chunks, step = [], self.size - self.overlap
        for start in range(0, len(spans), step):
            window = spans[start : start + self.size]
            chunks.append(text[window[0][0] : window[-1][1]])
            if start + self.size >= len(spans):
                break
        return chunks


def chunk_id(doc_id: str, index: int) -> str:
    return f"{doc_id}#{index}"
