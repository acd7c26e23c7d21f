# One folder for the environment, two commands for people: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
AGENT_CLI_DIR ?= $(CURDIR)/.cache/agent-clis

.PHONY: run test setup lint typecheck pytest agent-clis clean docs

# Two stamps in one environment: `make run` installs what the daemon needs, `make test` adds the development
# tools (ruff, mypy, pytest, ...). An environment that has the tools has the daemon's needs too, so `make run`
# after `make test` installs nothing.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

$(BIN)/python:
	@echo "==> creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip"
	$(BIN)/pip install --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	@if [ -f $(DEV_STAMP) ] && [ $(DEV_STAMP) -nt pyproject.toml ]; then \
		echo "==> $(VENV) already has skillopt (installed by make test)"; \
	else \
		echo "==> installing skillopt and what the daemon needs into $(VENV) (a minute or two the first time)"; \
		$(BIN)/pip install -e . || exit 1; \
	fi
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	@echo "==> installing skillopt with the development tools into $(VENV)"
	$(BIN)/pip install -e '.[dev]'
	touch $@ $(RUN_STAMP)

setup: $(DEV_STAMP)

run: $(RUN_STAMP)
	@echo "==> starting the daemon in the foreground (Ctrl-C stops it)"
	@echo "    next: in another terminal, $(BIN)/skillopt status shows what it found;"
	@echo "    $(BIN)/skillopt install claude-code (or codex, ...) connects an agent; see README.md"
	$(BIN)/skillopt daemon run

agent-clis:
	bash scripts/install-agent-clis.sh "$(AGENT_CLI_DIR)"

lint: setup
	$(BIN)/ruff check --no-cache skillopt_lib skillopt_daemon tests benchmarks testkit
	$(BIN)/ruff format --no-cache --check skillopt_lib skillopt_daemon tests benchmarks testkit
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
