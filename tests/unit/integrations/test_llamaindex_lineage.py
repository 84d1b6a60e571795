"""LlamaIndex nodes as the ingest's rows (no node): lineage from ``ref_doc_id``, and which documents a
write holds whole (only those have their earlier chunks replaced)."""

from __future__ import annotations

import pytest

from tests.support.extras import requires_extra

pytestmark = [pytest.mark.unit, requires_extra("llamaindex")]


def test_split_nodes_carry_their_document_and_position_and_a_straddling_document_is_not_whole():
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    from adapter.integrations.llamaindex import _whole_documents, framework_rows

    text = " ".join(f"Sentence number {i} says something about returns and refunds." for i in range(40))
    nodes = SentenceSplitter(chunk_size=48, chunk_overlap=0).get_nodes_from_documents(
        [Document(id_="a", text=text, metadata={"lang": "en"}), Document(id_="b", text="One short text.")]
    )
    rows = framework_rows(nodes)
    a_rows = [r for r in rows if r.parent_id == "a"]
    assert len(a_rows) > 3 and [r.chunk_index for r in a_rows] == list(range(len(a_rows)))
    assert all(r.metadata == {"lang": "en"} for r in a_rows) and rows[-1].parent_id == "b"
    assert _whole_documents(nodes) == {"a", "b"}
    assert _whole_documents(nodes[:2] + nodes[-1:]) == {"b"}  # "a" continues in another call: its other chunks stay
