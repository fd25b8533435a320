# palaestra: `make demo` (set up and run the main job) and `make test` (set up and run the suite).
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.palaestra-setup
# (the Go board core's C source too: the editable install compiles it, see setup.py)
SETUP_INPUTS := pyproject.toml setup.py scripts/setup.sh scripts/build-pachi.sh scripts/system-packages.txt src/palaestra/envs/board/_goboard.c src/palaestra/envs/board/_hexboard.c $(wildcard src/palaestra/envs/board/_boardcore*.h) $(wildcard web/package.json web/package-lock.json scripts/build-web-assets.sh)

.PHONY: setup demo test lint typecheck unit bench docs clean

$(STAMP): $(SETUP_INPUTS)
	bash scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/palaestra demo

lint: setup
	$(BIN)/ruff check src tests bench

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest

test: lint typecheck unit

bench: setup
	@for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

docs: setup
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache test-artifacts site
