# Two entry points: `make demo` (the main job) and `make test` (every test tier).
# Both create .venv on first use with everything the project needs, from PyPI.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test unit setup clean bench eval

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[models,eval,aws,test]'
	touch $(STAMP)

# Start the local OpenSearch node, build a hybrid index from the seed documents, search it.
demo: $(STAMP)
	$(BIN)/hybrid demo

# Unit and packaging tiers once, then the integration tier against each target (OpenSearch 3.6.0,
# 2.19.1, Elasticsearch), each on a local node it starts; or only OPENSEARCH_URL when set.
# HYBRID_TEST_TARGETS=opensearch-3.6.0 picks targets. Fails when any run fails or runs no test.
test: $(STAMP)
	$(BIN)/python scripts/test_targets.py

unit: $(STAMP)
	$(BIN)/python -m pytest -m unit

clean:
	rm -rf $(VENV) build dist *.egg-info

# Benchmarks (not tests): ratios measured side by side, written to docs/BENCHMARKS.md.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# The SciFact evaluation behind docs/EVALUATION.md.
eval: $(STAMP)
	$(BIN)/hybrid eval --dataset ../shared/data/scifact --embedder minilm --analyzer english --title-boost 0.5 --mmr 0.5 --tune \
		--tune-output out/tuned-scifact.json --json out/eval-scifact.json --plot out/eval-scifact.png
