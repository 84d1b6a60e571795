"""``hybrid local``'s run, the node faked: which node calls each action makes, what it prints, its exit code."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from adapter.cli import build_parser
from adapter.local import command
from adapter.local import node as local_node

pytestmark = pytest.mark.unit


@dataclass
class Status:
    name: str
    running: bool = True


class FakeNode:
    calls: list[str] = []
    clusters: list[FakeNode] = []
    running = True

    def __init__(self, config=None, *, log=None, name="node-1"):
        self.name = name

    @classmethod
    def running_clusters(cls, cache_dir, *, log):
        cls.calls.append("running_clusters")
        return cls.clusters

    def up(self):
        self.calls.append(f"up {self.name}")
        return type("Up", (), {"url": "http://127.0.0.1:9200"})()

    def down(self):
        self.calls.append(f"down {self.name}")
        return self.running

    def status(self):
        self.calls.append(f"status {self.name}")
        return Status(self.name, self.running)

    def logs(self, lines):
        self.calls.append(f"logs {lines}")
        return "the log"


def _run(monkeypatch, tmp_path, capsys, *argv, clusters=(), running=True):
    FakeNode.calls, FakeNode.clusters, FakeNode.running = [], [FakeNode(name=n) for n in clusters], running
    monkeypatch.setattr(local_node, "LocalNode", FakeNode)
    monkeypatch.setattr(command, "print_status", lambda status: print(f"status of {status.name}"))
    code = command.run(build_parser().parse_args(["local", *argv, "--cache-dir", str(tmp_path)]))
    return code, FakeNode.calls, capsys.readouterr().out


def test_status_and_down_of_every_cluster(monkeypatch, tmp_path, capsys):
    assert _run(monkeypatch, tmp_path, capsys, "status") == (
        3, ["running_clusters"], f"no local cluster is running from {tmp_path}\n"
    )  # fmt: skip
    assert _run(monkeypatch, tmp_path, capsys, "status", clusters=("a", "b")) == (
        0, ["running_clusters", "status a", "status b"], "status of a\nstatus of b\n"
    )  # fmt: skip
    code, calls, out = _run(monkeypatch, tmp_path, capsys, "status", "--json", clusters=("a",))
    assert (code, out) == (0, '[\n  {\n    "name": "a",\n    "running": true\n  }\n]\n')
    assert _run(monkeypatch, tmp_path, capsys, "status", "--json") == (3, ["running_clusters"], "[]\n")
    assert _run(monkeypatch, tmp_path, capsys, "down", "--all", clusters=("a", "b")) == (
        0, ["running_clusters", "down a", "down b"], ""
    )  # fmt: skip


def test_the_actions_on_one_node(monkeypatch, tmp_path, capsys):
    assert _run(monkeypatch, tmp_path, capsys, "up") == (0, ["up node-1"], "http://127.0.0.1:9200\n")
    assert _run(monkeypatch, tmp_path, capsys, "down") == (0, ["down node-1"], "")
    assert _run(monkeypatch, tmp_path, capsys, "down", running=False) == (
        0, ["down node-1"], f"node-1 is not running from {tmp_path}\n"
    )  # fmt: skip
    assert _run(monkeypatch, tmp_path, capsys, "status", "--nodes", "2") == (
        0, ["status node-1"], "status of node-1\n"
    )  # fmt: skip
    assert _run(monkeypatch, tmp_path, capsys, "status", "--secure", "--json", running=False) == (
        3, ["status node-1"], '{\n  "name": "node-1",\n  "running": false\n}\n'
    )  # fmt: skip
    assert _run(monkeypatch, tmp_path, capsys, "logs", "-n", "7") == (0, ["logs 7"], "the log\n")
