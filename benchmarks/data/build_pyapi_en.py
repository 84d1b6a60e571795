"""``pyapi-en``: an API reference searched by identifier, where BM25 should win by far.

    python -m benchmarks.data.build_pyapi_en        # runs /usr/bin/python3.11, writes pyapi-en/

Derived deterministically from the docstrings of Python's standard library as Debian ships it
(``libpython3.11-stdlib`` 3.11.2-6+deb12u6 on the machine it ran on; the committed files are its
output): the public functions, classes and methods of the modules in ``MODULES``. A document is one
of them: titled by its qualified name (``os.path.splitext``), its text the call's signature (else its
bare name) and the first paragraph of its docstring, cut at ``WORDS`` words. A query is a bare identifier as a
developer types it (``splitext``, ``getaddrinfo``, ``isoformat``); every document of that name is
relevant (grade 1): ``loads`` judges ``json.loads``, ``pickle.loads`` and ``marshal.loads``.

A name is a query only if at most ``MAX_SENSES`` documents carry it and it is not an English word
alone (it has an underscore, a digit, or is not in WordNet's index, when that is installed: the
point is identifiers, not prose); every ``QUERY_EVERY``-th such name (sorted) gives one, alternating
train / test. Objects without a docstring of at least ``MIN_WORDS`` words are left out.

Licence: the docstrings are part of CPython, under the Python Software Foundation License
(``/usr/share/doc/libpython3.11-stdlib/copyright``); reproduced here as a test collection.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

from .build import write_beir

HERE = Path(__file__).resolve().parent
PYTHON = "/usr/bin/python3.11"
MODULES = (
    "abc",
    "argparse",
    "array",
    "ast",
    "asyncio",
    "base64",
    "binascii",
    "bisect",
    "bz2",
    "calendar",
    "cmath",
    "codecs",
    "collections",
    "concurrent.futures",
    "configparser",
    "contextlib",
    "copy",
    "csv",
    "datetime",
    "decimal",
    "difflib",
    "email.utils",
    "enum",
    "filecmp",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "getpass",
    "gettext",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http.client",
    "http.cookies",
    "imaplib",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "math",
    "mimetypes",
    "multiprocessing",
    "operator",
    "os",
    "os.path",
    "pathlib",
    "pickle",
    "platform",
    "plistlib",
    "poplib",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "smtplib",
    "socket",
    "sqlite3",
    "ssl",
    "stat",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "sys",
    "sysconfig",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tokenize",
    "traceback",
    "types",
    "typing",
    "unicodedata",
    "urllib.parse",
    "urllib.request",
    "uuid",
    "warnings",
    "weakref",
    "webbrowser",
    "xml.etree.ElementTree",
    "zipfile",
    "zlib",
)
WORDS = 80
MIN_WORDS = 4
MAX_SENSES = 3
QUERY_EVERY = 9

# Run by Debian's interpreter: every public function, class and method of the modules, with its docstring.
DUMP = r"""
import importlib, inspect, json, re, sys
out = []
def doc_of(obj):
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()
def sig(name, obj):
    try:
        text = f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return ""
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # a default's repr holds its address: not the same twice
for modname in sys.argv[1:]:
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    for name in sorted(set(names)):
        obj = getattr(mod, name, None)
        if obj is None or not (inspect.isroutine(obj) or inspect.isclass(obj)):
            continue
        home = getattr(obj, "__module__", modname) or modname
        if home.lstrip("_").split(".")[0] != modname.split(".")[0] and not home.startswith("_"):
            continue  # re-exported from another module: documented there
        out.append((f"{modname}.{name}", name, sig(name, obj), doc_of(obj)))
        if inspect.isclass(obj):
            for attr, member in sorted(vars(obj).items()):
                if attr.startswith("_") or not inspect.isroutine(member):
                    continue
                out.append((f"{modname}.{name}.{attr}", attr, sig(attr, getattr(obj, attr)), doc_of(member)))
print(json.dumps(out))
"""


def objects() -> list[tuple[str, str, str, str]]:
    out = subprocess.run(
        [PYTHON, "-I", "-c", DUMP, *MODULES], capture_output=True, text=True, check=True, timeout=600
    ).stdout
    return [tuple(x) for x in json.loads(out)]


def english_words() -> set[str]:
    words: set[str] = set()
    for pos in ("noun", "verb", "adj", "adv"):
        path = Path(f"/usr/share/wordnet/index.{pos}")
        if path.is_file():
            words |= {
                line.split()[0] for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("  ")
            }
    return words


def main() -> None:
    docs, by_name, seen = [], defaultdict(list), set()
    for qualified, name, signature, doc in objects():
        words = doc.split()
        if len(words) < MIN_WORDS or qualified in seen:
            continue
        seen.add(qualified)
        # a reference page shows the name, with its call where it has one
        text = " ".join([signature or name] + words[:WORDS])
        docs.append(
            {"_id": qualified, "title": qualified, "text": text, "metadata": {"module": qualified.rsplit(".", 1)[0]}}
        )
        by_name[name].append(qualified)
    english = english_words()
    usable = sorted(
        n
        for n, ids in by_name.items()
        if len(ids) <= MAX_SENSES
        and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)
        and ("_" in n or any(c.isdigit() for c in n) or n.lower() not in english)
    )
    queries, qrels = [], {"train": [], "test": []}
    for n, name in enumerate(usable[::QUERY_EVERY]):
        qid = f"q{n + 1:03d}"
        queries.append({"_id": qid, "text": name, "metadata": {"kind": "identifier", "documents": len(by_name[name])}})
        qrels["train" if n % 2 == 0 else "test"] += [(qid, d) for d in by_name[name]]
    write_beir(HERE / "pyapi-en", docs, queries, qrels)
    print(
        f"pyapi-en: {len(docs)} documents, {len(queries)} queries (train {sum(1 for q in queries[::2])}, "
        f"test {sum(1 for q in queries[1::2])})"
    )


if __name__ == "__main__":
    main()
