# Two commands set everything up on a fresh machine:
#   make app    run the dashboard on the embedded (synthetic) demo data
#   make test   run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: app test lint bench demo-runs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[all,dev]'
	touch $(STAMP)

app: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/streamlit run app.py

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check mmbright_core tests benchmarks app.py app_pages
	$(BIN)/mypy

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

# The demo's shipped runs: text-only BM25 and OCR-augmented BM25 on tasks 2 and 4.
DEMO_RUNS := mmbright_core/data/demo/runs
demo-runs: $(STAMP)
	rm -rf $(DEMO_RUNS)
	for task in 2 4; do for retriever in bm25 ocr-bm25; do \
	  HF_HUB_OFFLINE=1 $(BIN)/mmbright run --source demo --task $$task --retriever $$retriever \
	    --out $(DEMO_RUNS) || exit 1; done; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache test-artifacts
