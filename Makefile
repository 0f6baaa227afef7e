# Each target does its own set-up: a fresh clone needs nothing but python3 and the package registries.
# System packages first (scripts/install-system-packages: installed as root, else the one line to run),
# then the virtualenv, then the work.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# pytest's workers: one per core (pytest-xdist); a test file's tests stay on one worker, so its
# module fixtures (programs built once) are built once. `make test PYTEST_WORKERS=0` runs serially.
PYTEST_WORKERS ?= auto
PYTEST_ARGS    ?=

.PHONY: test test-all test-fast demo docs bench clean system-demo system-test
.NOTPARALLEL:

system-demo system-test: system-%:
	@PYTHON=$(PYTHON) scripts/install-system-packages $*

# clang-headers: libclang's resource headers from PyPI (the ziglang wheel), so that parsing HIP needs
# no clang or hipcc on the machine.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,clang-headers]'
	touch $(STAMP)

# Without the longest end-to-end runs (@pytest.mark.long: each took 45 s or more on an idle two-core
# machine; docs/layout.md says what they are): `make test-all` runs them too.
test: system-test $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m 'not long' $(PYTEST_ARGS)

test-all: system-test $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# Without the end-to-end runs that build and run programs (@pytest.mark.slow): a quick look while editing.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m 'not slow' $(PYTEST_ARGS)

# The main job on the host backend: optimize one corpus program (a few minutes), then review it.
demo: system-demo $(STAMP)
	$(BIN)/rocm-perf optimize kernels/stencil2d.cu --backend host --rules unroll_manual --out runs/demo --new
	$(BIN)/rocm-perf review latest --out runs/demo

# The documentation site (mkdocs-material) into site/; --strict fails on a broken link or reference.
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

bench: $(STAMP)
	for b in tests/bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build site *.egg-info
