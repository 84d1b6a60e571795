"""Running the ``hybrid`` command line in-process with the test embedder.

``--embedder test:hashing`` loads :class:`tests.conftest.HashingEmbedder`: the subject of these
tests is input handling and the cluster, not the model (real models are tested in test_models.py).
"""

from __future__ import annotations

import pytest

from adapter.cli import main
from tests.conftest import HashingEmbedder

TEST_EMBEDDER = HashingEmbedder(32)


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli(*args) -> (exit code, stdout, stderr)`` with ``test:hashing`` loadable."""
    import adapter.models.embedders as embedders

    real = embedders.load_embedder
    monkeypatch.setattr(embedders, "load_embedder", lambda spec, **o: TEST_EMBEDDER if spec == "test:hashing" else real(spec, **o))

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def main_with_test_embedder(argv: list[str] | None = None) -> int:
    """``python -m tests.support.cli ARGS``: the ``hybrid`` command in a process of its own, with
    ``test:hashing`` loadable (for tests that run several commands at once)."""
    import adapter.models.embedders as embedders

    real = embedders.load_embedder
    embedders.load_embedder = lambda spec, **o: TEST_EMBEDDER if spec == "test:hashing" else real(spec, **o)  # type: ignore[assignment]
    return main(argv)


if __name__ == "__main__":
    import sys

    sys.exit(main_with_test_embedder(sys.argv[1:]))
