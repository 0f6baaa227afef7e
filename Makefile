# Each target does its own set-up: a fresh clone needs nothing but python3 and the package registries.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The main job on the host backend: optimize one corpus program (a few minutes), then review it.
demo: $(STAMP)
	$(BIN)/rocm-perf optimize kernels/stencil2d.cu --backend host --rules unroll_manual --out runs/demo --new
	$(BIN)/rocm-perf review latest --out runs/demo

bench: $(STAMP)
	for b in tests/bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
