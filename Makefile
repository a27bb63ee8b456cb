# The two commands of the README: `make demo` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   ?= $(CURDIR)/out/demo

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO)
	$(BIN)/kafka-auditor simulate unclean-election --out $(DEMO)/cluster --seed 7
	$(BIN)/kafka-auditor audit $(DEMO)/cluster --export-lost $(DEMO)/lost --exit-zero
	@echo "The committed records the unclean election lost: $(DEMO)/lost/lost-records.jsonl"

test: $(STAMP)
	$(BIN)/ruff check auditor parsers tests bench fixtures
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/bench_header_walk.py

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
