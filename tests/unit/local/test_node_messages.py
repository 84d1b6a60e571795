"""What the local node says when it starts: nothing about faiss, and the system user explained before it is created
(issue 22)."""

from __future__ import annotations

from types import SimpleNamespace


def test_node_start_is_quiet_about_faiss_and_status_says_it():
    """Before: every `hybrid local up` printed four sentences about faiss/nmslib libraries."""
    import inspect

    from adapter.local import knn_guard, node

    assert (
        not hasattr(knn_guard, "WARNING")
        and "announce" not in inspect.signature(node.LocalNode._guard_native_knn).parameters
    )
    assert knn_guard.STATUS_LINE.startswith("lucene only")


def test_the_system_user_is_explained_before_it_is_created(monkeypatch):
    from adapter.local import install as node_module

    said, ran = [], []
    fake = SimpleNamespace(
        config=SimpleNamespace(run_user=None),
        engine=SimpleNamespace(name="opensearch"),
        distribution=SimpleNamespace(name="opensearch"),
        log=said.append,
    )
    monkeypatch.setattr(node_module.os, "geteuid", lambda: 0)
    monkeypatch.setattr(node_module.pwd, "getpwnam", lambda user: (_ for _ in ()).throw(KeyError(user)))
    monkeypatch.setattr(node_module.shutil, "which", lambda name: "/usr/sbin/useradd")
    monkeypatch.setattr(node_module.subprocess, "run", lambda cmd, check: ran.append((list(said), cmd)))
    monkeypatch.delenv("HYBRID_RUN_USER", raising=False)
    node_module.run_user(fake.config, fake.distribution.name, fake.log)
    ((before, cmd),) = ran
    assert (
        cmd[0] == "/usr/sbin/useradd"
        and before
        and "refuses to run as root" in before[0]
        and "HYBRID_RUN_USER" in before[0]
    )
