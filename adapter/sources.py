"""Reading documents to ingest: JSONL, CSV and folders of .txt/.md files, with a field mapping.

Readers yield :class:`SourceDoc` for good rows and :class:`RowError` for bad ones (with line
numbers), so one bad row never hides the good ones. Chunking with overlap is a pure function.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .errors import InputError

ID_CANDIDATES = ("id", "_id", "doc_id")


@dataclass(frozen=True)
class SourceDoc:
    """One input document. ``text`` goes to the index's body field, ``title`` to its title field,
    ``extra`` to further text fields of the same names (see :mod:`adapter.documents`)."""

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)


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
    field as metadata; a tuple keeps just those fields.
    """

    id: str | None = None
    title: str | None = "title"
    text: str = "text"
    metadata: tuple[str, ...] | None = None

    def check(self, available: Sequence[str], where: str) -> FieldMap:
        """Resolve ``id`` and reject fields the input does not have (a clear error, not silence)."""
        keys = list(available)
        id_field = self.id
        if id_field is None:
            id_field = next((c for c in ID_CANDIDATES if c in keys), None)
            if id_field is None:
                raise InputError(f"{where}: no id field (looked for {', '.join(ID_CANDIDATES)}); available: {', '.join(keys)}")
        wanted = {"id": id_field, "text": self.text}
        if self.title and self.title != "title":
            wanted["title"] = self.title
        for name in self.metadata or ():
            wanted[f"metadata {name!r}"] = name
        for role, name in wanted.items():
            if name not in keys:
                raise InputError(f"{where}: the field mapping names {name!r} for {role}, but the input has only: {', '.join(keys)}")
        return FieldMap(id=id_field, title=self.title, text=self.text, metadata=self.metadata)

    def row(self, record: Mapping[str, Any], line: int) -> SourceDoc | RowError:
        broken = _not_unicode(record)
        if broken:
            return RowError(line, broken)
        raw_id = record.get(self.id)  # type: ignore[arg-type]
        if raw_id is None or str(raw_id).strip() == "":
            return RowError(line, f"no value in id field {self.id!r}")
        doc_id = str(raw_id).strip()
        text = record.get(self.text)
        if not isinstance(text, str) or not text.strip():
            return RowError(line, f"no text in field {self.text!r}", doc_id, empty=True)
        title = record.get(self.title) if self.title else ""
        if self.metadata is None:
            skip = {self.id, self.text, self.title}
            metadata = {k: v for k, v in record.items() if k not in skip and v not in (None, "")}
        else:
            metadata = {k: record[k] for k in self.metadata if record.get(k) not in (None, "")}
        return SourceDoc(doc_id, text, str(title or ""), metadata, line)


_SURROGATE = re.compile("[\ud800-\udfff]")
_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape turns an undecodable byte into


def _not_unicode(record: Mapping[str, Any]) -> str | None:
    """Why a record's text cannot be sent (a lone surrogate, from a JSON escape), or None."""
    for key, value in record.items():
        for text in (key, value):
            if isinstance(text, str) and _SURROGATE.search(text):
                return f"field {key!r} is not valid Unicode (a lone surrogate such as \\ud800); fix the escape in the input"
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


def read_jsonl(path: Path, fields: FieldMap) -> Iterator[SourceDoc | RowError]:
    def rows():
        resolved = None
        # Decoded line by line: one bad byte costs its own line, not the file.
        with open(path, encoding="utf-8-sig", errors="surrogateescape") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                bad_bytes = _undecoded(line)
                if bad_bytes:
                    yield RowError(line_no, bad_bytes)
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield RowError(line_no, _json_error(exc))
                    continue
                if not isinstance(record, dict):
                    yield RowError(line_no, f"expected a JSON object, got {type(record).__name__}")
                    continue
                if resolved is None:
                    resolved = fields.check(record.keys(), f"{path} line {line_no}")
                yield resolved.row(record, line_no)

    return _dedupe(rows())


def read_csv(path: Path, fields: FieldMap) -> Iterator[SourceDoc | RowError]:
    def rows():
        with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames:
                raise InputError(f"{path}: no header row")
            header_bytes = _undecoded(",".join(reader.fieldnames))
            if header_bytes:
                raise InputError(f"{path}: the header row is {header_bytes}")
            resolved = fields.check(reader.fieldnames, str(path))
            for record in reader:
                if None in record:  # more cells than header names
                    yield RowError(reader.line_num, f"{len(record[None])} more cells than the header has columns")
                    continue
                bad_bytes = next((b for b in map(_undecoded, (v for v in record.values() if isinstance(v, str))) if b), None)
                if bad_bytes:
                    yield RowError(reader.line_num, bad_bytes)
                    continue
                yield resolved.row(record, reader.line_num)

    return _dedupe(rows())


_HEADING = re.compile(r"^\s*#\s+(.+?)\s*$", re.MULTILINE)


def read_folder(path: Path) -> Iterator[SourceDoc | RowError]:
    """Every .txt/.md file below ``path``; id = relative path, title = first Markdown heading or file stem."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
    if not files:
        raise InputError(f"{path} contains no .txt or .md files")
    for file in files:
        rel = file.relative_to(path).as_posix()
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


def read_source(path: str | Path, fields: FieldMap | None = None, *, format: str | None = None) -> Iterator[SourceDoc | RowError]:
    """Pick the reader from ``format`` or the path (folder, .jsonl/.json, .csv)."""
    path = Path(path)
    fields = fields or FieldMap()
    if not path.exists():
        raise InputError(f"{path} does not exist")
    kind = format or ("folder" if path.is_dir() else path.suffix.lower().lstrip("."))
    if kind == "folder":
        return read_folder(path)
    if kind in ("jsonl", "ndjson", "json"):
        return read_jsonl(path, fields)
    if kind == "csv":
        return read_csv(path, fields)
    raise InputError(f"cannot tell the format of {path}; use .jsonl, .csv or a folder (or pass format=)")


def count_rows(path: str | Path) -> int | None:
    """Rows in a file or files in a folder, for a progress bar (None when unknown)."""
    path = Path(path)
    if path.is_dir():
        return sum(1 for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
    with open(path, "rb") as fh:
        lines = sum(1 for line in fh if line.strip())
    return max(lines - 1, 0) if path.suffix.lower() == ".csv" else lines


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
