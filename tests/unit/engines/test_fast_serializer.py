"""The clients the adapter makes write and read JSON through orjson (issue 37 item 4), with the same
documents as opensearch-py's own serializer."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid

import numpy as np
import pytest

from adapter.engines.opensearch.client import fast_serializer


def test_the_same_documents_as_opensearch_pys_serializer():
    from opensearchpy.serializer import JSONSerializer

    ours, theirs = fast_serializer(), JSONSerializer()
    document = {
        "query": {"match": {"text": "¿cómo devuelvo un pedido? \u200b"}},
        "size": 10,
        "from": 0,
        "knn": {"vector": np.float32([0.1, -0.25, 1 / 3]), "k": np.int64(100)},
        "when": datetime.date(2026, 12, 7),
        "at": datetime.datetime(2026, 12, 7, 8, 0, 3),
        "price": decimal.Decimal("2.50"),
        "id": uuid.UUID(int=7),
        "flags": [np.bool_(True), None, False],
        3: "an int key",
        "nested": [{"a": [1, 2.5, "x"]}],
    }
    assert json.loads(ours.dumps(document)) == json.loads(theirs.dumps(document)) | {
        "knn": {"vector": [0.1, -0.25, 0.33333334], "k": 100}
    }
    assert isinstance(ours.dumps(document), str) and ours.dumps("already text") == "already text"
    answer = '{"took": 3, "hits": {"hits": [{"_id": "a", "_score": 0.123456789012345678, "_source": {"t": "año"}}]}}'
    assert ours.loads(answer) == theirs.loads(answer)


def test_what_cannot_be_written_or_read_is_opensearch_pys_serialization_error():
    from opensearchpy.exceptions import SerializationError

    with pytest.raises(SerializationError):
        fast_serializer().dumps({"x": object()})
    with pytest.raises(SerializationError):
        fast_serializer().loads("{not json")


def test_the_adapters_clients_use_it():
    from adapter.engines.opensearch.client import connect

    client = connect("http://127.0.0.1:9")
    assert type(client.transport.serializer).__name__ == "OrjsonSerializer"
    assert type(client.transport.deserializer.serializers["application/json"]).__name__ == "OrjsonSerializer"
