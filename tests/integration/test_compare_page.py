"""The compare page of `hybrid serve` in a real headless Chromium, its server scripted (no cluster):
what a hit shows when its snippet would come from its title (issue 39: the page showed the title twice,
and no text)."""

from __future__ import annotations

import json
from pathlib import Path

from adapter.evaluation.html import environment
from tests.support.browser import watched_page

STATIC = Path(__file__).resolve().parents[2] / "adapter" / "web" / "static"
INFO = {
    "cluster": "http://fake:9200",
    "index": "docs",
    "engine": "opensearch",
    "version": "3.6.0",
    "embedder": "test/unit",
    "fusions": ["min_max-arithmetic_mean", "rrf"],
    "client_fusions": [],
    "default_fusion": "rrf",
    "reranker": None,
    "notes": [],
    "limits": {"query_chars": 1000, "k": 100, "depth": 1000, "columns": 4},
    "read_only": True,
    "techniques": ["bm25", "dense", "hybrid"],
    "report": None,
}
TEXT = (
    "Para devolver un pedido, entra en tu cuenta y elige la compra. Tienes 30 días desde la entrega; el reembolso "
    "llega en 5 días hábiles al mismo medio de pago. Los productos personalizados no admiten devolución. Si el paquete "
    "llegó dañado, guarda el embalaje y escríbenos con una foto antes de devolverlo."
)


def hit(doc_id, title, text, highlight, rank=1):
    return {
        "id": doc_id,
        "score": 0.9,
        "rank": rank,
        "title": title,
        "text": text,
        "highlight": highlight,
        "legs": [],
        "source": {},
        "chunks": [],
    }


def result(*hits):
    return {
        "technique": "bm25",
        "hits": list(hits),
        "notices": [],
        "fused_by": "none",
        "fusion": None,
        "pipeline": None,
        "took_ms": 1,
        "total_ms": 2,
        "requests": 1,
        "sent": [],
    }


def serve_page(page, columns):
    """The page as `hybrid serve` renders it, its static files, and ``columns`` as the answer of /api/compare."""
    html = environment().get_template("compare.html.j2").render(info=INFO, info_json=json.dumps(INFO))

    def answer(route):
        path = route.request.url.split("://", 1)[1].split("/", 1)[1].split("#")[0]
        if path == "":
            return route.fulfill(status=200, content_type="text/html", body=html)
        if path.startswith("static/"):
            return route.fulfill(
                status=200,
                content_type="text/javascript" if path.endswith(".js") else "text/css",
                body=(STATIC / path.removeprefix("static/")).read_text(encoding="utf-8"),
            )
        if path == "api/compare":
            return route.fulfill(status=200, content_type="application/json", body=json.dumps({"columns": columns}))
        return route.fulfill(status=404, body="")

    page.route("http://compare.test/**", answer)
    page.goto("http://compare.test/#" + "q=devoluciones&c=" + json.dumps([{"technique": "bm25"}]))
    page.wait_for_selector("body[data-state=done]", timeout=30_000)


def test_a_hit_matched_in_its_title_shows_its_text_not_its_title_twice(chromium):
    watched = watched_page(chromium)
    columns = [
        {
            "label": "bm25",
            "result": result(
                hit("ret", "Devoluciones y reembolsos", TEXT, {"title": ["<em>Devoluciones</em> y reembolsos"]}),
                hit(
                    "env",
                    "Envíos",
                    "Un envío a Canarias tarda de 3 a 5 días.",
                    {"text": ["Un <em>envío</em> a Canarias"], "title": ["<em>Envíos</em>"]},
                    2,
                ),
                hit("<b>", "Dos <em>x</em>", "Sin marcas.", {}, 3),
            ),
        }
    ]
    serve_page(watched.page, columns)
    items = watched.page.locator("#columns ol.hits li[data-doc]")
    first, second, third = items.nth(0), items.nth(1), items.nth(2)
    # The title matched: marked in the title line; the snippet is the text's start, as the search cuts it.
    assert first.locator(".title").inner_text() == "Devoluciones y reembolsos"
    assert first.locator(".title mark").inner_text() == "Devoluciones"
    snippet = first.locator("p.snippet").inner_text()
    assert snippet.startswith("Para devolver un pedido") and snippet.endswith("…") and "reembolsos" not in snippet[:30]
    # Both matched: the text's snippet, with its marks; the title marked too.
    assert (
        second.locator("p.snippet").inner_text() == "Un envío a Canarias"
        and second.locator("p.snippet mark").inner_text() == "envío"
    )
    assert second.locator(".title mark").inner_text() == "Envíos"
    # Nothing matched: the title as written (never parsed for marks), the text whole.
    assert third.locator(".title").inner_text() == "Dos <em>x</em>" and third.locator(".title mark").count() == 0
    assert third.locator("p.snippet").inner_text() == "Sin marcas."
    watched.screenshot("compare-title-snippet", full_page=False)
    assert watched.errors == []
