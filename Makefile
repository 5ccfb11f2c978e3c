# tileiropt: install, demo, test, lint.
#   make demo    install, then run the five phases on examples/ (report in examples/.tileiropt/report.md)
#   make test    install, then run the CPU test suite (on two processes, a test file each: pytest-xdist)
#   make test-fast  the decision tables and unit tests alone (seconds)
#   make demo-emulated  the demo under the tests' emulated nvtriton (build/demo-emulated/.tileiropt/report.md)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch: on a machine without CUDA, the CPU build (override TORCH_SPEC / TORCH_PIP_ARGS as needed,
# e.g. TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu").
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
# The CPU suite runs on Triton 3.6, the line nvtriton (the TileIR fork) maintains and the GPU image has: its
# interpreter still runs block pointers as TileIR gets them (3.8 emulates them in its front end, 3.9 removed
# them). numpy < 2.4: Triton 3.6's interpreter breaks on numpy 2.4 (`range(0, tl.cdiv(K, BK))`).
# `make smoke-newest` checks the newest Triton too.
TRITON_SPEC ?= triton==3.6.0
NUMPY_SPEC ?= numpy<2.4
NEWEST_VENV ?= .venv-newest

.PHONY: install demo demo-emulated test test-fast test-gpu lint rules-docs mutation smoke-newest slurm-packages clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
		echo "CUDA GPU found: keeping pip's default torch"; \
	else \
		echo "no CUDA GPU: installing the CPU build of torch ($(TORCH_SPEC)), $(TRITON_SPEC), $(NUMPY_SPEC)"; \
		$(BIN)/python -m pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"; \
		$(BIN)/python -m pip install -q "$(TRITON_SPEC)" "$(NUMPY_SPEC)"; \
	fi
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

demo: install
	$(BIN)/tileiropt run examples/

# The demo with ENABLE_TILE=1 under the tests' emulated nvtriton (tests/emulated_nvtriton): the TileIR path as a
# Blackwell user starts it; the report says "emulated TileIR" wherever the TileIR backend appears.
demo-emulated: install
	rm -rf build/demo-emulated && mkdir -p build && cp -r examples build/demo-emulated
	rm -rf build/demo-emulated/.tileiropt
	ENABLE_TILE=1 PYTHONPATH=$(CURDIR)/tests/emulated_nvtriton $(BIN)/tileiropt run build/demo-emulated/

# both cores of the CI machine, a test file per process (module fixtures run once; the suite is 8-9 min there)
TEST_PROCESSES ?= 2
test: install
	$(BIN)/python -m pytest -q -n $(TEST_PROCESSES) --dist loadfile

# what decides and what transforms, without running a kernel file end to end
FAST_TESTS := tests/decisions tests/test_rules.py tests/test_lint_output.py tests/test_captured_launch.py \
	tests/test_transform_units.py tests/test_golden_transforms.py tests/test_math_in_place.py tests/test_structure_script.py \
	tests/test_store.py tests/test_layers.py
test-fast: install
	$(BIN)/python -m pytest -q $(FAST_TESTS)

test-gpu: install
	$(BIN)/python -m pytest -q -m gpu

# The newest Triton from PyPI in its own venv: the real-kernel tests and the demo under its interpreter.
smoke-newest:
	rm -rf $(NEWEST_VENV)
	$(PYTHON) -m venv $(NEWEST_VENV)
	$(NEWEST_VENV)/bin/python -m pip install -q --upgrade pip
	$(NEWEST_VENV)/bin/python -m pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(NEWEST_VENV)/bin/python -m pip install -q -e '.[dev]'
	$(NEWEST_VENV)/bin/python -c "import triton; print('smoke test on triton', triton.__version__)"
	$(NEWEST_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_real_kernels.py tests/test_capture.py
	cp -r examples $(NEWEST_VENV)/examples && $(NEWEST_VENV)/bin/tileiropt run $(NEWEST_VENV)/examples/

# Debian's SLURM and munge, for the test that starts a one-node cluster (tests/engine/test_slurm.py); needs root.
SLURM_BINARIES := /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged /usr/bin/srun
slurm-packages:
	@if ls $(SLURM_BINARIES) >/dev/null 2>&1; then echo "SLURM and munge present"; else \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			slurmctld slurmd slurm-client munge >/dev/null && echo "installed SLURM and munge"; fi

# Mutation testing of the decision code against its decision tables (mutmut; not in CI). Score: docs/mutation.md.
MUTMUT_SPEC ?= mutmut==3.8.1
mutation: install
	$(BIN)/python -m pip install -q "$(MUTMUT_SPEC)"
	$(BIN)/mutmut run --max-children 2
	$(BIN)/python benchmarks/mutation_score.py --survivors

lint: install
	$(BIN)/ruff check tileiropt tests
	$(BIN)/mypy

# docs/rules.md from the rule classes and release files (tests/test_rule_pages.py keeps it equal)
rules-docs: install
	$(BIN)/tileiropt rule --all > docs/rules.md

clean:
	rm -rf $(VENV) $(NEWEST_VENV) .pytest_cache .ruff_cache mutants examples/.tileiropt examples/*_tileir.py
