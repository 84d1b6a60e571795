"""A spec with the adaptive default is written as YAML and read back (issue 32 item 11)."""

from __future__ import annotations

import pytest

from adapter.models.fingerprint import EmbeddingFingerprint

FP = EmbeddingFingerprint("intfloat/multilingual-e5-small", "multilingual-e5-small", "sha256:x", 384, True)


# -- item 11: `hybrid plan --write-spec FILE.yaml` ---------------------------------------------------
@pytest.mark.parametrize("name", ["spec.yaml", "spec.json"])
def test_a_spec_with_the_adaptive_default_is_written_as_yaml_and_read_back(tmp_path, name):
    """Before: yaml.safe_dump raised RepresenterError on FusionMode.ADAPTIVE (a traceback, exit 1); JSON worked."""
    from adapter.fusion.choice.values import ADAPTIVE
    from adapter.index.spec import Spec, dump_spec, load_spec

    spec = Spec(alias="docs", embedder="multilingual-e5-small", default=ADAPTIVE, fingerprint=FP)
    again = load_spec(dump_spec(spec, tmp_path / name))
    assert again == spec and again.default == "adaptive"
    assert (
        "default: adaptive" in (tmp_path / name).read_text() or '"default": "adaptive"' in (tmp_path / name).read_text()
    )
