# One folder for the environment, two commands for people: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
AGENT_CLI_DIR ?= $(CURDIR)/.cache/agent-clis

.PHONY: run test setup lint typecheck pytest agent-clis clean docs

$(BIN)/skillopt: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/skillopt

setup: $(BIN)/skillopt

run: setup
	$(BIN)/skillopt daemon run

agent-clis:
	bash scripts/install-agent-clis.sh "$(AGENT_CLI_DIR)"

lint: setup
	$(BIN)/ruff check skillopt_lib skillopt_daemon tests benchmarks
	$(BIN)/ruff format --check skillopt_lib skillopt_daemon tests benchmarks
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

pytest: setup
	SKILLOPT_AGENT_CLI_DIR="$(AGENT_CLI_DIR)" $(BIN)/pytest -q $(PYTEST_ARGS)

test: setup agent-clis lint typecheck pytest

docs: setup
	$(BIN)/python -m skillopt_daemon.cli.reference > docs/cli.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
