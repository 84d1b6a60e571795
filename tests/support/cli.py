"""Running the ``hybrid`` command line in-process with the test embedder.

``--embedder test:hashing`` loads :class:`tests.conftest.HashingEmbedder`: the subject of these
tests is input handling and the cluster, not the model (real models are tested in test_models.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from adapter.cli import main
from tests.conftest import ROOT, HashingEmbedder

TEST_EMBEDDER = HashingEmbedder(32)


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli(*args) -> (exit code, stdout, stderr)`` with ``test:hashing`` loadable."""
    import adapter.models.embedders as embedders

    real = embedders.load_embedder
    monkeypatch.setattr(
        embedders, "load_embedder", lambda spec, **o: TEST_EMBEDDER if spec == "test:hashing" else real(spec, **o)
    )

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def init_args(index: str, url: str, *extra, embedder: str = "test:hashing") -> list[str]:
    """``hybrid init`` of ``index`` at ``url`` for the test embedder; ``extra`` (``--analyzer``, ...) after: the
    arguments for :func:`cli` or :func:`cli_process`."""
    return ["init", "--index", index, "--embedder", embedder, "--url", url, *map(str, extra)]


def ingest_args(src, index: str, url: str, *extra, embedder: str = "test:hashing") -> list[str]:
    """``hybrid ingest`` of ``src`` into ``index`` at ``url``, with the test embedder, no cache, quiet; ``extra``
    (``--failures``, ``--partition``, ...) after: the arguments for :func:`cli` or :func:`cli_process`."""
    quiet = ("--embedder", embedder, "--no-cache", "-q")
    return ["ingest", str(src), "--index", index, "--url", url, *quiet, *map(str, extra)]


def cli_process(*args, cwd=ROOT, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The ``hybrid`` command in a process of its own (``test:hashing`` and ``test:stuck`` loadable), in ``cwd`` (its
    default files land there), ``env`` over this process's; its output piped, as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.cli", *map(str, args)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class StuckEmbedder(HashingEmbedder):
    """``test:stuck``: :data:`TEST_EMBEDDER`'s vectors (its fingerprint too), but its second call touches the file
    ``HYBRID_TEST_STUCK_MARK`` names and then stays in C code for minutes, as a large model's forward pass on a long
    text does (no Python signal handler runs in between: Ctrl-C waited for it)."""

    calls = 0

    def embed_documents(self, texts):
        import hashlib
        import os
        from pathlib import Path

        StuckEmbedder.calls += 1
        if StuckEmbedder.calls == 2:
            Path(os.environ["HYBRID_TEST_STUCK_MARK"]).touch()
            hashlib.pbkdf2_hmac("sha256", b"stuck", b"salt", 500_000_000)  # minutes of C code
        return super().embed_documents(texts)


def main_with_test_embedder(argv: list[str] | None = None) -> int:
    """``python -m tests.support.cli ARGS``: the ``hybrid`` command in a process of its own, with
    ``test:hashing`` (and ``test:stuck``) loadable (for tests that run several commands at once, or signal one)."""
    import adapter.models.embedders as embedders

    real = embedders.load_embedder
    ours = {"test:hashing": TEST_EMBEDDER, "test:stuck": StuckEmbedder(TEST_EMBEDDER.dimension)}
    embedders.load_embedder = lambda spec, **o: ours[spec] if spec in ours else real(spec, **o)  # type: ignore[assignment]
    return main(argv)


if __name__ == "__main__":
    import sys

    sys.exit(main_with_test_embedder(sys.argv[1:]))


def fresh_cli(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The ``hybrid`` command in a fresh interpreter, as on an install without the ``block``\\ ed packages
    (each is set to None in ``sys.modules``, so importing it fails as if it were not installed)."""
    code = (
        "import sys\n"
        + "".join(f"sys.modules[{name!r}] = None\n" for name in block)
        + "from adapter.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}
    )
