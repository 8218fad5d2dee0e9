# The two entry points of the README. Both set everything up first (idempotent).
.PHONY: setup run test

setup:
	bash scripts/setup.sh

run: setup
	bash recipes/multi30k_enfr/run.sh --quick

test: setup
	.venv/bin/python -m pytest -q
