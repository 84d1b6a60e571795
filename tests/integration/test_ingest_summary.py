"""The ingest summary adds up to the progress bar (issue 39): the bar counts rows (11/11), the summary said
`documents: 8` and the failures below it, with nothing saying that 8 + 3 are the 11."""

from __future__ import annotations

import json

from tests.support.cli import cli, ingest_args, init_args  # noqa: F401  (fixture)


def test_the_summary_says_the_rows_the_bar_counted(cli, index_name, tmp_path, opensearch_url):
    path = tmp_path / "rows.jsonl"
    good = [json.dumps({"id": f"d{i}", "text": f"texto {i}"}) for i in range(8)]
    path.write_text(
        "\n".join([*good, "{bad", json.dumps({"id": "x"}), json.dumps({"id": "d0", "text": "again"})]) + "\n"
    )
    assert cli(*init_args(index_name, opensearch_url, "--analyzer", "spanish"))[0] == 0
    code, out, err = cli(*ingest_args(path, index_name, opensearch_url, "--failures", tmp_path / "failures.jsonl"))
    assert code == 3, err
    assert "documents: 8  chunks: 8  failures: 3  (11 rows: the progress bar's, each landed or failed)" in out
