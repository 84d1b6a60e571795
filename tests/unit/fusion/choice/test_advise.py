import pytest

from adapter.errors import InputError
from adapter.fusion.choice.advise import advise, classify


@pytest.mark.parametrize(
    "query, reason",
    [
        ("error E-4012", "code: E-4012"),
        ("¿cuál es la política de reembolso para el pedido #8821?", "number: #8821"),
        ("upgrade to 3.5.0 breaks login", "version: 3.5.0"),
        ('search for "reciprocal rank fusion"', 'quoted phrase: "reciprocal rank fusion"'),
        ("BRCA1 mutations raise cancer risk", "identifier: BRCA1"),
        ("HIV treatment outcomes", "acronym: HIV"),
        ("what did Cormack propose", "proper name: Cormack"),
        ("CVE-2024-3094 in xz", "code: CVE-2024-3094"),
        ("contact admin@example.com", "e-mail or URL: admin@example.com"),
        # Code identifiers (issue 31: an API reference searched by name, where BM25 is far the stronger leg).
        ("put_nowait", "identifier: put_nowait"),
        ("LifoQueue", "identifier: LifoQueue"),
        ("how do I call getElementById", "identifier: getElementById"),
        ("os.path.splitext", "dotted name: os.path.splitext"),
    ],
)
def test_exact_terms_are_found_with_a_reason(query, reason):
    c = classify(query)
    assert c.kind == "exact" and reason in c.reasons


@pytest.mark.parametrize(
    "query",
    [
        "¿cómo devuelvo un pedido?",
        "How does attention work in transformers?",
        "the cat sat on the mat",
        "Los envíos tardan entre 5 y 7 días",
        "e.g. a fast sort, i.e. quicksort",  # abbreviations are not dotted names
        "state-of-the-art retrieval",  # a hyphen is not an underscore
    ],
)
def test_natural_language_queries(query):
    c = classify(query)
    assert c.kind == "natural", c.reasons


def test_decision_rule_thresholds():
    natural = [
        "how do I reset my password",
        "why is my order late",
        "what is your refund policy",
        "can I change my address",
    ]
    assert advise(natural * 5).recommendation == "dense"
    mixed = natural * 2 + ["error E-4012", "order #8821", "version 2.19.1"]  # 3/11 = 27% exact, 73% natural
    a = advise(mixed)
    assert a.recommendation == "hybrid" and "mixed" in a.reason
    heavy = natural + ["error E-4012", "order #8821"]  # 33% exact
    a = advise(heavy)
    assert a.recommendation == "hybrid" and a.exact_share == pytest.approx(2 / 6)
    assert a.matches("hybrid") and not a.matches("dense") and not a.matches("bm25")
    with pytest.raises(InputError):
        advise(["", "  "])


@pytest.mark.parametrize(
    "query, kind",
    [
        ("CrashLoopBackOff", "exact"),
        ("pod in CrashLoopBackOff after deploy", "exact"),
        ("OOMKilled", "exact"),
        ("my container was killed for using too much RAM", "natural"),
        ("download the invoice as a PDF", "natural"),
        ("ECONNREFUSED when calling the API", "exact"),
        ("E1234 on checkout", "exact"),
        ("HIV treatment outcomes", "exact"),
    ],
)
def test_advise_reads_troubleshooting_queries_as_a_person_does(query, kind):
    """Before: `CrashLoopBackOff` was natural language (a capital at the start is no name) and "...too much RAM"
    exact."""
    assert classify(query).kind == kind, classify(query).reasons
