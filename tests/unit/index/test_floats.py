"""The query vector on the wire: float32's shortest decimals, the same float32 values to the bit."""

from __future__ import annotations

import json

import numpy as np

from adapter.index.floats import compact_floats


def _significant(text: str) -> int:
    mantissa = text.lower().split("e")[0].lstrip("-").replace(".", "")
    return len(mantissa.lstrip("0").rstrip("0")) or 1


def test_every_value_reads_back_as_the_same_float32_in_its_shortest_form():
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            (rng.normal(size=20_000) / 20).astype(np.float32),  # what normalised embeddings hold
            rng.uniform(-1e6, 1e6, 2_000).astype(np.float32),
            (10.0 ** rng.uniform(-40, 38, 2_000)).astype(np.float32),  # subnormals to the largest
            np.array([0.0, -0.0, 1.0, 0.1, -0.5, 3.4e38, 1e-45], dtype=np.float32),
        ]
    )
    compact = compact_floats(values)
    written = json.loads(json.dumps(compact))  # what any JSON encoder sends, as the server parses it
    assert np.array_equal(
        np.array(written, dtype=np.float32).view(np.uint32) & 0x7FFFFFFF, values.view(np.uint32) & 0x7FFFFFFF
    )
    assert np.array_equal(np.signbit(np.array(written, dtype=np.float32)), np.signbit(values))
    # numpy's str of a float32 is its shortest round-trip decimal: never more digits than that.
    longer = [(c, v) for c, v in zip(compact, values) if _significant(repr(c)) > _significant(str(v))]
    assert longer == []


def test_the_body_shrinks_and_a_float64_vector_is_sent_as_the_float32_the_server_keeps():
    vector = np.random.default_rng(3).normal(size=384)
    vector /= np.linalg.norm(vector)
    before, after = json.dumps([float(x) for x in vector]), json.dumps(compact_floats(vector))
    assert len(after) < 0.7 * len(before)
    assert np.array_equal(np.array(json.loads(after), dtype=np.float32), vector.astype(np.float32))
    assert (
        compact_floats([0.1, 0.25]) == [0.1, 0.25] and json.dumps(compact_floats(np.float32([1 / 3]))) == "[0.33333334]"
    )


def test_a_value_that_is_not_finite_is_left_for_the_vector_check_to_refuse():
    out = compact_floats([0.5, float("nan")])
    assert out[0] == 0.5 and np.isnan(out[1])
