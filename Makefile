# The two commands of the README:
#   make demo   set up .venv and train the example classifier on real text, printing its accuracy
#   make test   set up .venv (with the test extra) and run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python examples/testament_classifier.py --config hparams/testament_classifier.yaml

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q tests

lint: $(VENV)/.installed
	$(BIN)/ruff check texkit tests examples
	$(BIN)/ruff format --check texkit tests examples

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
