"""Which languages a sample of documents is written in: py3langid (the ``language`` extra), whose
model ships inside its wheel (4.6 MB, numpy only; ~0.6 s to load once, then ~0.1 ms a text), so
nothing is downloaded at run time. The rule that turns the answer into an analyzer and embedder is
pure: :mod:`adapter.index.language`."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any, Callable, Iterable

from adapter.index.language import SAMPLE_DOCUMENTS, Languages

TEXT_CHARS = 1000  # of each document: enough to tell its language, little to classify


@functools.cache
def _classifier() -> Callable[[str], Any] | None:
    try:
        import py3langid  # type: ignore[import-untyped]  # no stubs; classify(text) -> (language, score)
    except ImportError:
        return None
    classify: Callable[[str], Any] = py3langid.classify
    return classify


def detector_installed() -> bool:
    return _classifier() is not None


def detect_languages(
    texts: Iterable[str], *, source: str = "the documents", limit: int = SAMPLE_DOCUMENTS
) -> Languages | None:
    """How many of the first ``limit`` non-empty ``texts`` are in each language; None when no
    detector is installed (the ``language`` extra)."""
    classify = _classifier()
    if classify is None:
        return None
    counts: Counter[str] = Counter()
    for text in texts:
        text = text.strip()[:TEXT_CHARS]
        if not text:
            continue
        counts[str(classify(text)[0])] += 1
        if sum(counts.values()) >= limit:
            break
    n = sum(counts.values())
    return Languages(
        tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))), f"{n} document{'s' * (n != 1)} of {source}"
    )
