# The two entry points of the README. Both set everything up first (idempotent).
.PHONY: setup run test

setup:
	bash scripts/setup.sh

# the toolkit's job at demo scale (6–12 min measured on 2 shared cores, recipe part): phrase-based baseline vs +RNN Encoder–Decoder score on
# the full Multi30k En→Fr (recipes/experiment/multi30k_demo.yaml; the whole table: multi30k.yaml)
run: setup
	bash recipes/experiment/run.sh recipes/experiment/multi30k_demo.yaml

# the suite (~10 min budget on 2 cores): in PYTEST_WORKERS processes (pytest-xdist; the recipe tests are
# single-threaded, so two of them overlap on 2 cores; --dist loadfile keeps the stage tests of one quick
# experiment, one file, in one process on one shared folder; tests/conftest.py starts the slow tests first);
# the 15 slowest tests are listed at the end
PYTEST_WORKERS ?= 2
test: setup
	.venv/bin/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15
