"""``glossary-en``: a glossary of things searched by another name for them, where the dense leg should win by far.

    apt-get install wordnet-base                    # WordNet 3.0 (Debian 1:3.0-37)
    python -m benchmarks.data.build_glossary_en     # reads /usr/share/wordnet/data.noun, writes glossary-en/

Derived deterministically from WordNet 3.0's noun synsets of two lexicographer files, artifacts
(``noun.artifact``) and foods (``noun.food``). A document is one synset: titled by its first word
("car"), its text the synset's definition and examples ("a motor vehicle with four wheels; usually
propelled by an internal combustion engine; he needs a car to get to work"). A query is **another
word of the same synset** ("automobile"): what someone calls the thing when the glossary calls it
something else. The synset is the one relevant document (grade 1).

A word is a query only if it names one noun synset in the whole of WordNet (no other sense to be
right about), none of its words occurs in the relevant document (title, definition or examples:
BM25 can only find it through other entries that happen to use the word), and it is made of letters
(hyphens and spaces allowed). Every ``DOC_EVERY``-th synset of the two files (by offset) is a
document, and the query synsets are always kept; every ``QUERY_EVERY``-th eligible synset gives
one query (its first eligible word), alternating train / test.

Licence: WordNet 3.0 licence (Princeton University; permissive, see
``/usr/share/doc/wordnet-base/copyright``): "Permission to use, copy, modify and distribute this
software and database and its documentation for any purpose and without fee or royalty is hereby
granted", with the copyright notice kept; reproduced here as a test collection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .build import write_beir

HERE = Path(__file__).resolve().parent
WORDNET = Path("/usr/share/wordnet")
LEXFILES = {"06": "artifact", "13": "food"}
DOC_EVERY = 3
QUERY_EVERY = 9
WORD = re.compile(r"[a-z]+(?:[- ][a-z]+)*")


@dataclass(frozen=True)
class Synset:
    offset: str
    lexfile: str
    words: tuple[str, ...]
    definition: str
    examples: tuple[str, ...]

    @property
    def text(self) -> str:
        return "; ".join((self.definition, *self.examples))


def _word(raw: str) -> str:
    return re.sub(r"\(.*?\)$", "", raw).replace("_", " ").strip()


def parse(line: str) -> Synset:
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    count = int(fields[3], 16)
    words = tuple(_word(fields[4 + 2 * i]) for i in range(count))
    parts = [p.strip() for p in gloss.strip().split(";")]
    examples = tuple(p.strip('"').strip() for p in parts if p.startswith('"'))
    definition = "; ".join(p for p in parts if p and not p.startswith('"'))
    return Synset(fields[0], fields[1], words, definition, examples)


def synsets() -> list[Synset]:
    with open(WORDNET / "data.noun", encoding="utf-8") as fh:
        return [parse(line) for line in fh if not line.startswith("  ")]


def senses() -> dict[str, int]:
    """How many noun synsets each word names (index.noun's synset count)."""
    out = {}
    with open(WORDNET / "index.noun", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("  "):
                continue
            fields = line.split()
            out[fields[0].replace("_", " ")] = int(fields[2])
    return out


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def query_word(s: Synset, sense_count: dict[str, int]) -> str | None:
    """The first of the synset's other words that can be a query (module docstring), or None."""
    inside = tokens(s.words[0]) | tokens(s.text)
    for word in s.words[1:]:
        w = word.lower()
        if WORD.fullmatch(w) and sense_count.get(w) == 1 and not tokens(w) & inside:
            return word
    return None


def main() -> None:
    every = [s for s in synsets() if s.lexfile in LEXFILES and len(s.definition.split()) >= 3]
    sense_count = senses()
    eligible = [s for s in every if query_word(s, sense_count)]
    asked = eligible[::QUERY_EVERY]
    keep = {s.offset for s in every[::DOC_EVERY]} | {s.offset for s in asked}
    docs = [
        {
            "_id": f"n{s.offset}",
            "title": s.words[0],
            "text": s.text,
            "metadata": {"lexfile": f"noun.{LEXFILES[s.lexfile]}"},
        }
        for s in every
        if s.offset in keep
    ]
    queries, qrels = [], {"train": [], "test": []}
    for n, s in enumerate(asked):
        qid = f"q{n + 1:03d}"
        queries.append({"_id": qid, "text": query_word(s, sense_count), "metadata": {"kind": "synonym"}})
        qrels["train" if n % 2 == 0 else "test"].append((qid, f"n{s.offset}"))
    write_beir(HERE / "glossary-en", docs, queries, qrels)
    print(
        f"glossary-en: {len(docs)} documents, {len(queries)} queries (train {len(qrels['train'])}, test "
        f"{len(qrels['test'])})"
    )


if __name__ == "__main__":
    main()
