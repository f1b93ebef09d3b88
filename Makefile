# The two commands of the README: `make lab` (the main job) and `make test` (the tests).
# Both set up what they need themselves: a virtualenv in .venv, this package, and the pinned
# npm reference servers in tests/servers/node_modules.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
NPM_STAMP := tests/servers/node_modules/.installed-$(shell cat tests/servers/package-lock.json | cksum | cut -d' ' -f1)
CONFORMANCE_STAMP := tests/conformance/node_modules/.installed-$(shell cat tests/conformance/package-lock.json | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=
# pytest-xdist workers (0: one process); the conftest starts the longest tests first, and each
# worker is handed one test at a time (--maxschedchunk=1: xdist's default hands out runs of
# neighbours, so a module of slow tests, the notebooks, would queue on one worker)
PYTEST_WORKERS ?= 4
# The pytest plugins the suite uses, and only those: the ones other packages install are not loaded,
# and pytest does not assertion-rewrite their packages (langsmith's 223 modules, hypothesis's 74,
# anyio's 31: a third of each pytest process's collection). Bytecode is written (an environment
# may set PYTHONDONTWRITEBYTECODE): each module of this checkout and of .venv is compiled once
# per run, not once per process, and pytest keeps the test modules it rewrote.
PYTEST_PLUGINS := -p xdist.plugin -p pytest_timeout

.PHONY: lab test demo lint venv npm conformance extensions bench bench-quick bench-batch bench-load docs clean

# --no-compile: a module is compiled when first imported (a few hundred of them), not all of them
# at install (half of the install's time)
venv: $(STAMP)
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e ".[test,lab]"
	rm -f $(VENV)/.installed-* && touch $@

npm: $(NPM_STAMP)
$(NPM_STAMP): tests/servers/package-lock.json
	cd tests/servers && npm ci --prefer-offline --no-audit --no-fund --loglevel=error
	touch $@

## make conformance: the official MCP conformance suite and the Node 22 binary it needs (an npm
## package: the machines have Node 20), pinned in tests/conformance/package-lock.json
conformance: $(CONFORMANCE_STAMP)
$(CONFORMANCE_STAMP): tests/conformance/package-lock.json
	cd tests/conformance && npm ci --prefer-offline --no-audit --no-fund --loglevel=error
	touch $@

## make extensions: the extension test servers' virtualenvs (FastMCP 4.2 serving skills, fastmcp-tasks
## 4.1 serving SEP-2663 tasks: each pins its own fastmcp, so each has its own), pinned in
## tests/servers/extensions/*.txt
EXT := tests/servers/extensions
SKILLS_STAMP := $(EXT)/skills-venv/.installed-$(shell cat $(EXT)/skills.txt | cksum | cut -d' ' -f1)
TASKS_STAMP := $(EXT)/tasks-venv/.installed-$(shell cat $(EXT)/tasks.txt | cksum | cut -d' ' -f1)
extensions: $(SKILLS_STAMP) $(TASKS_STAMP)
$(SKILLS_STAMP): $(EXT)/skills.txt
$(TASKS_STAMP): $(EXT)/tasks.txt
$(SKILLS_STAMP) $(TASKS_STAMP):
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet --no-compile --no-deps -r $<
	rm -f $(@D)/.installed-* && touch $@

## make lab: JupyterLab on the quickstart notebook, with the embedded demo toolbox
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)
lab: venv
	$(VENV)/bin/jupyter lab $(LAB_ARGS) notebooks/01-quickstart.ipynb

## make demo: headless smoke run of the main job (open demo, call tools, print results)
demo: venv
	$(VENV)/bin/workbench-magic demo

## make bench: the workbench against the raw SDK, FastMCP and ClientSessionGroup (see bench/README.md)
BENCH_STAMP := $(VENV)/.bench-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,lab,bench]"
	rm -f $(VENV)/.bench-* && touch $@
## the bench's client nobody here wrote: the MCP Inspector's CLI (section 15), pinned in bench/package-lock.json
BENCH_NPM_STAMP := bench/node_modules/.installed-$(shell cat bench/package-lock.json | cksum | cut -d' ' -f1)
$(BENCH_NPM_STAMP): bench/package-lock.json
	cd bench && npm ci --prefer-offline --no-audit --no-fund --loglevel=error
	touch $@
bench: $(BENCH_STAMP) npm
	$(PY) bench/run.py
bench-quick: $(BENCH_STAMP) npm
	$(PY) bench/run.py --quick
## make bench-load: section 15, serve under the Inspector's --load and 100,000 calls (about 3 minutes; not in `make bench`)
bench-load: $(BENCH_STAMP) npm $(BENCH_NPM_STAMP)
	$(PY) bench/run.py --only load --out bench/results/load.json
## make bench-batch: section 14, a 1,000,000-row checkpointed wb.map (about 11 minutes; not in `make bench`)
bench-batch: $(BENCH_STAMP)
	$(PY) bench/run.py --only bigbatch --out bench/results/bigbatch.json

## make docs: the documentation site, built strictly (a warning fails it) and offline into site/ (mkdocs.yml):
## the tutorials with the outputs of CI's run (build/notebooks/, else executed here), the reference from the code
DOCS_STAMP := $(VENV)/.docs-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,lab,docs]"
	rm -f $(VENV)/.docs-* && touch $@
docs: $(DOCS_STAMP)
	$(PY) docs/prepare.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	$(PY) -m pytest -q -p no:cacheprovider tests/test_docs.py  # with the docs extra: none of its tests skips

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

## make test: set up (the virtualenv and the npm servers side by side), then lint and type-check
## beside the whole suite against real servers (the checks' report follows the suite's; either
## failing fails it). The checks run niced: they take the CPU the tests leave idle (the tests wait
## on kernels, browsers and servers), not the CPU the workers' collection needs at the start.
## The Binder environment the notebooks run in (tests/notebook/binder_environment.py) is built
## from the first second, beside the set-up, in a process group of its own (ended with make).
BINDER_ENV := build/binder-env
test:
	@rm -rf $(BINDER_ENV) && mkdir -p build; \
	setsid $(PYTHON) tests/notebook/binder_environment.py $(BINDER_ENV) > build/binder-env.log 2>&1 & binder=$$!; \
	trap 'kill -- -$$binder 2>/dev/null' EXIT; \
	$(MAKE) --no-print-directory -j3 venv npm conformance extensions || exit 1; \
	nice -n 10 $(MAKE) --no-print-directory lint > $(VENV)/lint.log 2>&1 & lint=$$!; \
	WORKBENCH_TEST_BINDER=$(BINDER_ENV) PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE= \
		$(PY) -m pytest $(PYTEST_PLUGINS) -n $(PYTEST_WORKERS) $(if $(filter 0,$(PYTEST_WORKERS)),,--maxschedchunk=1) \
		$(PYTEST_ARGS); tests=$$?; \
	wait $$lint; linted=$$?; \
	echo "---- make lint (run beside the tests) ----"; cat $(VENV)/lint.log; \
	test $$tests -eq 0 && test $$linted -eq 0

clean:
	rm -rf $(VENV) tests/servers/node_modules tests/conformance/node_modules bench/node_modules $(EXT)/*-venv site $(BINDER_ENV) build/binder-env.log
