# The two commands of the README: `make demo` and `make test`. Everything installs into .venv.
# PYTHON: the first of python3, python3.12, python3.11, python3.10 on PATH that is a supported Python
# (3.10-3.12, see requires-python) with venv and ensurepip; set PYTHON=/path/to/python to choose another.
SUPPORTED := import sys, venv, ensurepip; sys.exit(not (3, 10) <= sys.version_info[:2] < (3, 13))
PYTHON ?= $(firstword $(foreach p,python3 python3.12 python3.11 python3.10,\
	$(shell $(p) -c '$(SUPPORTED)' >/dev/null 2>&1 && echo $(p))))
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   ?= $(CURDIR)/out/demo

.PHONY: install demo demo-history test lint bench clean browser

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "no Python 3.10-3.12 with venv on PATH: install one or set PYTHON=/path/to/python3.12" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[spark,test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO)
	$(BIN)/kafka-auditor simulate unclean-election --out $(DEMO)/cluster --seed 7
	$(BIN)/kafka-auditor audit $(DEMO)/cluster --export-lost $(DEMO)/lost --exit-zero
	@echo "The committed records the unclean election lost: $(DEMO)/lost/lost-records.jsonl"

# The nightly flow of the README ("Every night") on a simulated month: captures of 6 brokers (folders and archives), ingest,
# report (text: the regressions found), then the HTML page and the Prometheus textfile of the whole month.
demo-history: $(STAMP)
	rm -rf $(DEMO)-history
	$(BIN)/kafka-auditor simulate history --out $(DEMO)-history/captures --days 30 --seed 7
	$(BIN)/kafka-auditor ingest $(DEMO)-history/captures/archives --into $(DEMO)-history/warehouse
	$(BIN)/kafka-auditor report --warehouse $(DEMO)-history/warehouse --exit-zero
	$(BIN)/kafka-auditor report --warehouse $(DEMO)-history/warehouse --all -f html -o $(DEMO)-history/report.html --exit-zero
	$(BIN)/kafka-auditor report --warehouse $(DEMO)-history/warehouse --all -f prometheus -o $(DEMO)-history/kafka_auditor.prom --exit-zero
	@echo "The month's HTML report: $(DEMO)-history/report.html; the textfile: $(DEMO)-history/kafka_auditor.prom"

# The HTML report is checked in a real headless browser (tests/report/test_html_browser.py). In CI (CI=true,
# as root, with apt) Debian's Chromium is installed when missing; elsewhere the check skips without a browser.
browser:
	@if [ "$$CI" = true ] && ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the HTML browser check"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
			|| echo "could not install chromium: the HTML browser check will skip"; \
	fi

test: $(STAMP) browser
	$(BIN)/ruff check auditor parsers tests bench fixtures
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m pytest -q

# The pages of docs/checks/, one per check, generated from the rule registry (a test fails when one is stale).
.PHONY: docs
docs: $(STAMP)
	$(BIN)/python -m auditor.rules.docs --write docs/checks

bench: $(STAMP)
	$(BIN)/python bench/bench_header_walk.py

# 1 M mutated inputs over every parser entry point (bench/fuzz.py); FUZZ="--count 20000 --seed 3" to vary.
.PHONY: fuzz
fuzz: $(STAMP)
	$(BIN)/python bench/fuzz.py --count 1000000 --seed 0 --save out/fuzz $(FUZZ)

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
