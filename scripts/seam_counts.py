"""The seam's counts (issue 27), from the source alone (ast): run from the repository root,
``python scripts/seam_counts.py [-v]`` (``-v`` lists each place).

- ``client: Any`` parameters outside ``adapter/engines/`` (the seam typed ``Any``);
- ``cluster_for(...)`` calls in ``adapter/`` (a raw client turned into the port);
- ``.search_pipelines`` read outside ``adapter/engines/`` (the old "is this OpenSearch?" flag);
- comparisons with an engine's name outside ``adapter/engines/`` and ``adapter/local/`` (which
  provisions the two distributions, not the engine seam);
- functions in ``adapter/`` over 60 lines;
- abstract methods of each class in ``adapter/engines/port.py`` (the port's core and its facets).
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path("adapter")
ENGINE_NAME = re.compile(r"['\"](elasticsearch|opensearch)['\"]")


def counts() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {
        k: [] for k in ("client_any", "cluster_for", "search_pipelines", "engine_names", "long")
    }
    for path in sorted(ROOT.rglob("*.py")):
        engines, local = "engines" in path.parts, "local" in path.parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                if not engines and any(
                    a.arg == "client" and a.annotation is not None and ast.unparse(a.annotation) == "Any" for a in args
                ):
                    found["client_any"].append(f"{where} {node.name}")
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 60:
                    found["long"].append(f"{where} {node.name} ({lines} lines)")
            elif isinstance(node, ast.Call):
                f = node.func
                if (
                    f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                ) == "cluster_for":
                    found["cluster_for"].append(where)
            elif isinstance(node, ast.Attribute) and node.attr == "search_pipelines" and not engines:
                found["search_pipelines"].append(where)
            elif isinstance(node, ast.Compare) and not (engines or local) and ENGINE_NAME.search(ast.unparse(node)):
                found["engine_names"].append(f"{where} {ast.unparse(node)}")
    return found


def abstract_methods() -> dict[str, list[str]]:
    tree = ast.parse((ROOT / "engines" / "port.py").read_text(encoding="utf-8"))
    out = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names = [
            f.name
            for f in cls.body
            if isinstance(f, ast.FunctionDef)
            and any(ast.unparse(d).endswith("abstractmethod") for d in f.decorator_list)
        ]
        if names:
            out[cls.name] = names
    return out


def main(argv: list[str]) -> int:
    titles = {
        "client_any": "`client: Any` parameters outside adapter/engines/",
        "cluster_for": "cluster_for(...) calls in adapter/",
        "search_pipelines": "`.search_pipelines` reads outside adapter/engines/",
        "engine_names": "engine-name comparisons outside adapter/engines/ and adapter/local/",
        "long": "functions in adapter/ over 60 lines",
    }
    for key, places in counts().items():
        print(f"{len(places):4d}  {titles[key]}")
        if "-v" in argv:
            print("".join(f"        {p}\n" for p in places), end="")
    for cls, names in abstract_methods().items():
        print(f"{len(names):4d}  abstract methods of port.{cls}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
