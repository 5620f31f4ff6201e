# The two commands of the quick start. Each installs what it needs (scripts/setup.sh).
.PHONY: demo test setup lint bench
SHELL := /bin/bash

setup:
	@./scripts/setup.sh

demo: setup
	.venv/bin/python -m baseline.demo $(DEMO_ARGS)

# Most of the suite waits on real programs, daemons and BPF compiles rather than on the CPU, so
# it runs in one more pytest-xdist worker than there are cores. A module's tests stay on one
# worker (--dist loadscope): its fixtures (a recorded set, a generated fleet) are built once.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

test: setup
	.venv/bin/ruff check .
	.venv/bin/lint-imports --no-cache
	.venv/bin/python -m pytest -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

bench: setup
	.venv/bin/python -m bench.run_all $(BENCH_ARGS)
