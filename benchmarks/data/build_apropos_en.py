"""``apropos-en``: short keyword queries over the installed manual pages (section 1), as ``apropos`` is used.

    python -m benchmarks.data.build_apropos_en      # reads /usr/share/man/man1, writes apropos-en/

Derived deterministically from the manual pages of the machine it runs on (Debian bookworm here;
the committed files are what it wrote on 2026-12-01). A document is a page's DESCRIPTION section
(its first ``WORDS`` words, as ``man`` renders it), titled by the command's name; a query is the
page's one-line summary from its NAME section (``ls - list directory contents`` -> ``list
directory contents``), which the document does not contain as such: the user knows what the
command does, not its name or the words of its manual. The page itself is the one relevant
document (grade 1). Left out: Google Cloud SDK pages (thousands of near-identical generated pages),
``.so`` stubs and links, pages whose DESCRIPTION has fewer than ``MIN_WORDS`` words; a summary
that several pages share is not used as a query (it names no single page). Every
``QUERY_EVERY``-th remaining page (sorted by name) gives a query; queries alternate train / test.
Each document records its Debian package (``dpkg -S``), whose copyright file gives its licence.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

from .build import write_beir

HERE = Path(__file__).resolve().parent
MAN1 = Path("/usr/share/man/man1")
WORDS = 150
MIN_WORDS = 20
QUERY_EVERY = 4
SKIP = ("gcloud", "bq_", "gsutil")


def render(path: Path) -> str:
    env = {**os.environ, "MANWIDTH": "2000", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""}
    out = subprocess.run(["man", "-l", str(path)], capture_output=True, env=env, timeout=60).stdout
    return subprocess.run(["col", "-bx"], input=out, capture_output=True, timeout=60).stdout.decode("utf-8", "replace")


def sections(text: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            current = line.strip().upper()
            out.setdefault(current, [])
        elif current is not None:
            out[current].append(line.strip())
    return {k: " ".join(x for x in v if x) for k, v in out.items()}


def summary(name_section: str) -> str | None:
    m = re.search(r"\s[-\u2010\u2013\u2014]+\s+(.*)$", name_section)
    if not m:
        return None
    text = re.sub(r"\s+", " ", m.group(1)).strip().rstrip(".")
    return text if len(text.split()) >= 2 else None


def pages() -> list[Path]:
    out = []
    for p in sorted(MAN1.glob("*.1.gz")):
        if p.is_symlink() or p.name.startswith(SKIP):
            continue
        with gzip.open(p, "rt", errors="replace") as fh:
            if fh.read(4).startswith(".so"):
                continue
        out.append(p)
    return out


def packages(paths: list[Path]) -> dict[str, str]:
    out = subprocess.run(["dpkg", "-S", *map(str, paths)], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        pkg, _, path = line.partition(": ")
        found[path.strip()] = pkg.split(":")[0]
    return found


def main() -> None:
    paths = pages()
    owners = packages(paths)
    docs, summaries = [], {}
    for p in paths:
        secs = sections(render(p))
        words = secs.get("DESCRIPTION", "").split()
        name = p.name[: -len(".1.gz")]
        if len(words) < MIN_WORDS:
            continue
        docs.append(
            {
                "_id": name,
                "title": name,
                "text": " ".join(words[:WORDS]),
                "metadata": {"package": owners.get(str(p), "unknown")},
            }
        )
        s = summary(secs.get("NAME", ""))
        if s:
            summaries[name] = s
    shared = Counter(s.lower() for s in summaries.values())
    usable = [d["_id"] for d in docs if d["_id"] in summaries and shared[summaries[d["_id"]].lower()] == 1]
    queries, qrels = [], {"train": [], "test": []}
    for n, doc_id in enumerate(usable[::QUERY_EVERY]):
        qid = f"q{n + 1:03d}"
        queries.append({"_id": qid, "text": summaries[doc_id], "metadata": {"kind": "summary"}})
        qrels["train" if n % 2 == 0 else "test"].append((qid, doc_id))
    write_beir(HERE / "apropos-en", docs, queries, qrels)
    print(
        f"apropos-en: {len(docs)} documents, {len(queries)} queries (train {len(qrels['train'])}, test "
        f"{len(qrels['test'])})"
    )


if __name__ == "__main__":
    main()
