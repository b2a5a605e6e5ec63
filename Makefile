# ML Systems Internals: Distributed training. `make help` lists the targets.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Pyodide, pinned with its sha512 in package-lock.json (course/pyodide.py)
PYODIDE := $(VENV)/pyodide/installed.json
HOST ?= 127.0.0.1:8000
# torch comes from PyTorch's CPU index by default, as in CI: PyPI's Linux
# build of the same version pulls several GB of CUDA libraries. Where
# that index cannot be reached, pip falls back to PyPI. With a GPU:
# `make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128`, or
# TORCH_INDEX= for PyPI's default build (README, "Running on a GPU").
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# "--extra-index-url URL" if URL answers within 5 s, else nothing, so an
# unreachable index costs no pip retries for every package.
export REACHABLE_INDEX := import sys, urllib.request as r; \
  r.urlopen(sys.argv[1], timeout=5); print("--extra-index-url", sys.argv[1])
export NO_MKDOCS_2_WARNING := 1
# Builds of one commit are byte-identical on any day: the sitemap's dates
# come from the last commit, not the clock.
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "} {printf "  make %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "Python 3.11 or newer is needed as $(PYTHON)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet --group train \
	  $$($(BIN)/python -c "$$REACHABLE_INDEX" $(TORCH_INDEX) 2>/dev/null)
	$(BIN)/python -m pip install --quiet --group test
	$(BIN)/python -c 'import pathlib, site; pathlib.Path(site.getsitepackages()[0], "course-root.pth").write_text("$(CURDIR)\n")'
	touch $@

$(PYODIDE): package-lock.json | $(STAMP)
	$(BIN)/python -m course.pyodide install
	touch $@

.PHONY: setup
setup: $(STAMP) $(PYODIDE) ## Create .venv and install everything (done on first use)

.PHONY: pyodide
pyodide: $(PYODIDE) ## Install the pinned Pyodide the browser runner ships (npm, else urllib)

.PHONY: serve
serve: $(STAMP) $(PYODIDE) ## Serve the site on http://127.0.0.1:8000, rebuilding on edits
	$(BIN)/mkdocs serve --dev-addr $(HOST) --livereload

.PHONY: build
build: $(STAMP) $(PYODIDE) ## Strict build of the site into site/
	$(BIN)/mkdocs build --strict --clean --site-dir site

.PHONY: lint
lint: $(STAMP) ## ruff: lint and format check of code, snippets and tests
	$(BIN)/ruff check .
	$(BIN)/ruff format --check snippets course tests

.PHONY: browser
browser: $(STAMP) ## Get the Chromium the browser tests drive, if missing
	$(BIN)/python -m course.browser install

.PHONY: test
test: $(STAMP) $(PYODIDE) browser ## Every check: lint, strict build, all tests
	$(MAKE) lint
	$(MAKE) build
	$(BIN)/pytest

.PHONY: stress
stress: $(STAMP) ## Launch the torchrun script 50 times per layout; count aborts
	$(BIN)/python -m course.stress --launches $(or $(LAUNCHES),50)

.PHONY: measure
measure: $(STAMP) ## Run the torchrun launches the pages show; record snippets/torchrun/results/
	$(BIN)/python -m course.measure

.PHONY: screenshots
screenshots: $(STAMP) browser ## Screenshot every page, light and dark, into screenshots/
	$(MAKE) build
	$(BIN)/python -m course.browser screenshots

.PHONY: update-outputs
update-outputs: $(STAMP) ## Re-record what the code blocks in docs/ print
	$(BIN)/pytest tests/test_docs.py --update-outputs -q

.PHONY: format
format: $(STAMP) ## Format code, snippets and tests with ruff
	$(BIN)/ruff format snippets course tests
	$(BIN)/ruff check --fix .

.PHONY: clean
clean: ## Remove the built site and caches (keeps .venv)
	rm -rf site .cache .pytest_cache

.PHONY: clean-venv
clean-venv: ## Remove .venv (the next command sets it up again)
	rm -rf $(VENV)

.PHONY: bench
bench: $(STAMP) ## Print build, rebuild and training speed figures
	$(BIN)/python -m course.bench
