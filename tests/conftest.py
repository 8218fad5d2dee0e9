"""Fixtures of both floors' tests: the toy corpus (tests/toy_corpus.py) and one torch thread."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.toy_corpus import make_toy_data


@pytest.fixture
def toy_data(tmp_path: Path) -> Path:
    return make_toy_data(tmp_path / "data")


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test (deterministic reductions on every CPU; the CI box is
    shared). Use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files with ``slow`` end-to-end tests first, those with the most slow tests first (a file's tests keep
    their order: the quick experiments build on the tests before them), then the rest in collection order.
    ``make test`` runs ``--dist loadfile --no-loadscope-reorder``, so pytest-xdist hands out the files in this
    order: the long ones start at once on different workers and the short ones fill in around them, instead of
    the longest file starting late and ending the run alone (xdist's default reorder, by number of tests, put
    the 9-test Multi30k table file behind the 300-test probe)."""
    slow = Counter(item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow") is not None)
    items.sort(key=lambda item: -slow[item.nodeid.split("::")[0]])  # a stable sort: the order is otherwise kept
