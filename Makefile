# cw — one entry point per task. `make run` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CW := $(BIN)/cw
STAMP := $(VENV)/.installed
SOURCE ?=

.PHONY: run test test-all test-slow lint fmt bench eval clean install screenshots

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

# Imports the bundled demo archive (or SOURCE=path for your own sessions) into CW_HOME
# (default: ./.cw-demo) and shows a listing and a search.
run: $(STAMP)
	@CW_HOME=$${CW_HOME:-$(CURDIR)/.cw-demo} $(BIN)/python -m cwtui.demo $(SOURCE)

# Regenerates screenshots/: every TUI screen over the demo archive, as SVG (plus PNG when
# rsvg-convert or the cairosvg package is available).
screenshots: $(STAMP)
	$(BIN)/python -m cwtui.screenshots

# The strict run keeps its own mypy cache: sharing one, each run rewrote the modules' entries
# with its own options and the other found them stale, so both checked everything every time
# (about 20 CPU seconds and 50 s of a loaded machine, instead of under 2 s when warm).
lint: $(STAMP)
	$(BIN)/ruff check cwcore cwtui tests bench eval
	$(BIN)/ruff format --check cwcore cwtui tests bench eval
	$(BIN)/mypy
	$(BIN)/mypy --strict --cache-dir .mypy_cache/strict \
		cwcore/contract cwcore/methods cwcore/retrieve cwcore/recall
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format cwcore cwtui tests bench eval
	$(BIN)/ruff check --fix cwcore cwtui tests bench eval

# The fast tier: every test not marked slow, on three workers (many tests wait on subprocesses
# and sockets, so a third worker fills two cores), Hypothesis's "fast" profile (timings with
# the load they were taken at: docs/testing.md).
test: lint
	CW_HYPOTHESIS_PROFILE=fast $(BIN)/pytest -m "not slow" -n 3

# The slow tier alone: the slow tests (crash trials, 8.5 and 20 MiB messages, long property
# runs) and every property test again at its full example count (the "thorough" profile), one
# at a time so that no test shares the machine with another.
test-slow: $(STAMP)
	CW_HYPOTHESIS_PROFILE=thorough $(BIN)/pytest -m "slow or property"

# Everything: the fast tier, then the slow one (what .ci/run runs).
test-all: test test-slow

bench: $(STAMP)
	$(BIN)/python -m bench

# Retrieval quality on every dev set (agent-log queries, LongMemEval_S, the demo set) and
# preflight quality on the labelled preflight sets (eval/sets/preflight-*), each skipped when
# its data is absent; see eval/README.md.
eval: $(STAMP)
	$(BIN)/python -m eval

clean:
	rm -rf $(VENV) .cw-demo bench/results
