"""Fixtures of both floors' tests: the toy corpus (tests/toy_corpus.py) and one torch thread."""
from __future__ import annotations

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
    """The ``slow`` end-to-end tests first, the order otherwise kept: under pytest-xdist the long ones then
    start at once on different workers and the short ones fill in around them, instead of a long test
    starting last and ending the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
