# tileiropt: install, demo, test, lint.
#   make demo    install, then run the five phases on examples/ (report in examples/.tileiropt/report.md)
#   make test    install, then run the CPU test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch: on a machine without CUDA, the CPU build (override TORCH_SPEC / TORCH_PIP_ARGS as needed,
# e.g. TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu").
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=

.PHONY: install demo test test-gpu lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
		echo "CUDA GPU found: keeping pip's default torch"; \
	else \
		echo "no CUDA GPU: installing the CPU build of torch ($(TORCH_SPEC))"; \
		$(BIN)/python -m pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"; \
	fi
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

demo: install
	$(BIN)/tileiropt run examples/

test: install
	$(BIN)/python -m pytest -q

test-gpu: install
	$(BIN)/python -m pytest -q -m gpu

lint: install
	$(BIN)/ruff check tileiropt tests

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache examples/.tileiropt examples/*_tileir.py
