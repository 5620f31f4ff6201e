# The two commands of the quick start. Each installs what it needs (scripts/setup.sh).
.PHONY: demo test setup lint bench
SHELL := /bin/bash

setup:
	@./scripts/setup.sh

demo: setup
	.venv/bin/python -m baseline.demo $(DEMO_ARGS)

test: setup
	.venv/bin/ruff check .
	.venv/bin/lint-imports --no-cache
	.venv/bin/python -m pytest $(PYTEST_ARGS)

bench: setup
	.venv/bin/python -m bench.run_all $(BENCH_ARGS)
