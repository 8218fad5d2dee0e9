"""Fixtures of the smt-rescore tests: two tiny trained models and a toy phrase table (module scope)."""
from __future__ import annotations

import pytest

from tests.smt.neural.rescore_fixtures import toy_table, train_model
from tests.toy_corpus import make_toy_data


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("rescore")
    data = make_toy_data(root / "data")
    fwd = train_model(data, root / "fwd", "en", "fr")
    rev = train_model(data, root / "rev", "fr", "en")
    table = toy_table(data, root / "phrase-table.gz")
    return {"root": root, "data": data, "fwd": fwd, "rev": rev, "table": table}
