# Two commands set everything up on a fresh machine:
#   make app    run the dashboard on the embedded (synthetic) demo data (PORT=8502 for another port)
#   make test   run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Two installs into the one environment: the dashboard alone (no PyTorch, no Ray; a backend
# that needs more says which extra to install), and everything the tests need. The full
# install covers the dashboard's, so it renews both stamps.
STAMP := $(VENV)/.installed
APP_STAMP := $(VENV)/.installed-app
PORT ?= 8501

.PHONY: app test lint bench demo-runs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(APP_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[app]'
	touch $(APP_STAMP)

# The analyzer's agreement test runs the official baseline's own analyzer: pyserini's, whose
# wheel carries Anserini's Lucene jar, on Java through pyjnius. Without its dependencies
# (dense retrieval, never used here), so it stays out of the extras.
PYSERINI := pyserini==0.22.1 pyjnius==1.9.0

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[all,dev]'
	$(BIN)/python -m pip install --no-deps $(PYSERINI)
	touch $(STAMP) $(APP_STAMP)

app: $(APP_STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/mmbright app --port $(PORT)

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check mmbright_core tests benchmarks app.py
	$(BIN)/mypy

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

# The demo's shipped runs: text-only BM25 and OCR-augmented BM25 on tasks 2 and 4
# (run_it2t_<model> and it2it_<model>; older shipped copies are named run_<model>).
DEMO_RUNS := mmbright_core/data/demo/runs
demo-runs: $(STAMP)
	rm -rf $(DEMO_RUNS)
	for task in 2 4; do for retriever in bm25 ocr-bm25; do \
	  HF_HUB_OFFLINE=1 $(BIN)/mmbright run --source demo --task $$task --retriever $$retriever \
	    --out $(DEMO_RUNS) || exit 1; done; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache test-artifacts
