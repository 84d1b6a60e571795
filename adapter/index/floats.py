"""Vectors on the wire: each float32 as the shortest decimal that reads back as the same float32.

A ``knn_vector`` / ``dense_vector`` field holds float32, and the server parses the query vector's JSON
numbers into float32. ``json`` writes a float32 widened to float64 with 17 significant digits
(``0.10000000149011612``), of which the server keeps what rounds to float32; the shortest decimal
that rounds to the same float32 (``0.1``) is what the server reads anyway, in about 60 % of the
bytes and with a faster encode. :func:`compact_floats` returns float64 values whose ``repr`` is that
decimal, so every JSON encoder (opensearch-py's, elasticsearch-py's, the standard library's) writes
it: nothing changes on the server, to the bit.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import orjson


def compact_floats(vector: Sequence[float] | np.ndarray) -> list[float]:
    """``vector`` as float32 values, each the float64 nearest the shortest decimal that rounds to the
    same float32 (orjson writes numpy float32 in its shortest form; reading that back gives those
    float64s). A vector with a value that is not finite comes back as plain floats: it is refused
    before it is sent (:func:`adapter.search.retrieve.check_query_vector`), and JSON has no NaN."""
    x = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
    if not np.isfinite(x).all():
        return [float(v) for v in x]
    values: list[float] = orjson.loads(orjson.dumps(x, option=orjson.OPT_SERIALIZE_NUMPY))
    return values
